// `writ rm ID --to HOST:PORT --identity DIR`: removal through a running serve, signed,
// allowed for the key that delivered ID and for `serve --admin-key` keys, with the same
// promise check and exit codes as `writ store rm`.
#include <gtest/gtest.h>

#include <filesystem>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::string PublicKeyHexOf(const std::string& identity_dir) {
  CommandRun shown = RunWrit({"key", "show", "--identity", identity_dir});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  return shown.out.substr(0, shown.out.find(' '));
}

TEST(OnlineRm, TheDeliveringKeyAndAnOperatorKeyMayRemoveOthersMayNot) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  const std::string alice = dir.File("alice"), mallory = dir.File("mallory");
  const std::string op = dir.File("operator");
  std::filesystem::create_directory(dir.File("out"));
  auto serve =
      Serve::StartWithStderr("tcp", {"--data", dir.File("data"), "--out", dir.File("out"), "--ttl",
                                     "power-loss=1h", "--admin-key", PublicKeyHexOf(op)});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 7, 40000);
  for (const std::string id : {"a", "b", "c"}) {
    CommandRun sent = RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", id,
                               "--retention", "power-loss", "--identity", alice});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
  }
  // Another key: refused (3), nothing removed.
  CommandRun other = RunWrit({"rm", "a", "--to", serve->address(), "--identity", mallory});
  EXPECT_EQ(other.exit_code, 3) << other.err;
  EXPECT_NE(other.err.find("did not deliver a"), std::string::npos) << other.err;
  // The delivering key, before the promised time: refused (3) as store rm is; --force removes.
  CommandRun early = RunWrit({"rm", "a", "--to", serve->address(), "--identity", alice});
  EXPECT_EQ(early.exit_code, 3) << early.err;
  EXPECT_NE(early.err.find("promises it is held until"), std::string::npos) << early.err;
  CommandRun forced =
      RunWrit({"rm", "a", "--to", serve->address(), "--identity", alice, "--force", "--json"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(forced.json["removed"], "a");
  EXPECT_EQ(forced.json["promise_broken"], true);
  auto logged = serve->ReadLineStartingWith("writ: store: removed delivery a ", 10s);
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_NE(logged->find("removed by writ rm from key"), std::string::npos) << *logged;
  EXPECT_FALSE(std::filesystem::exists(dir.File("out/a"))) << "its --out file goes too";
  EXPECT_TRUE(std::filesystem::exists(dir.File("out/b")));
  // An operator key removes what another key delivered.
  CommandRun by_operator =
      RunWrit({"rm", "b", "--to", serve->address(), "--identity", op, "--force"});
  EXPECT_EQ(by_operator.exit_code, 0) << by_operator.err;
  EXPECT_EQ(RunWrit({"query", "b", "--to", serve->address()}).exit_code, 1) << "gone";
  // Unknown id: 1; unreachable serve: 4; no --identity: a usage error (2).
  EXPECT_EQ(RunWrit({"rm", "nope", "--to", serve->address(), "--identity", op}).exit_code, 1);
  EXPECT_EQ(RunWrit({"rm", "c", "--to", "127.0.0.1:1", "--identity", alice}).exit_code, 4);
  EXPECT_EQ(RunWrit({"rm", "c", "--to", serve->address()}).exit_code, 2);
  EXPECT_EQ(RunWrit({"query", "c", "--to", serve->address()}).exit_code, 0) << "c is untouched";
  EXPECT_EQ(serve->Stop(), 0);
}

}  // namespace
}  // namespace writ::testing
