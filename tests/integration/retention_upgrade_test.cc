// A stronger retention class asked for an id already held upgrades the copy (real
// `writ serve --data` and `writ send` processes): the bytes move again, are validated, and
// the stronger copy takes the place of the weaker one; other content is still refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

std::string RetainedClass(const json& send_output) {
  for (const auto& r : send_output["receipts"]) {
    if (r["rung"] == "retained") return r["retention"];
  }
  return "";
}

TEST(RetentionUpgrade, AStrongerClassUpgradesTheHeldCopyAndOtherContentIsStillRefused) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve on this machine");
  TempDir dir;
  WritePatternFile(dir.File("payload"), 21, 200000);
  WritePatternFile(dir.File("other"), 22, 200000);
  const std::string data = dir.File("data");
  auto serve = Serve::Start("tcp", {"--data", data});
  ASSERT_TRUE(serve);
  auto send = [&](const std::string& file, const std::string& id, const std::string& retention) {
    return RunWrit({"send", dir.File(file), "--to", serve->address(), "--id", id, "--retention",
                    retention, "--json"});
  };
  for (const char* retention : {"volatile", "process-restart", "power-loss"}) {
    CommandRun run = send("payload", "up", retention);
    ASSERT_EQ(run.exit_code, 0) << retention << ": " << run.err;
    EXPECT_EQ(run.json["reached"]["retention"], retention);
    EXPECT_EQ(RetainedClass(run.json), retention);
  }
  // Held as power-loss now: a weaker class is answered with it.
  CommandRun weaker = send("payload", "up", "volatile");
  ASSERT_EQ(weaker.exit_code, 0) << weaker.err;
  EXPECT_EQ(RetainedClass(weaker.json), "power-loss");

  // Other bytes under a held id are a conflict, upgrade or not.
  ASSERT_EQ(send("payload", "taken", "volatile").exit_code, 0);
  CommandRun conflict = send("other", "taken", "power-loss");
  EXPECT_NE(conflict.exit_code, 0) << conflict.out;
  const std::string why = conflict.json["error"]["message"];
  EXPECT_NE(why.find("conflicting id"), std::string::npos) << why;
  EXPECT_EQ(serve->Stop(), 0);

  // One durable copy of `up`, power-loss; the process-restart one is gone.
  CommandRun listed = RunWrit({"store", "ls", "--data", data});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("power-loss"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("process-restart"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("taken"), std::string::npos) << listed.out;
  size_t payloads = 0;
  for (const auto& entry : std::filesystem::directory_iterator(data + "/payloads")) {
    (void)entry;
    ++payloads;
  }
  EXPECT_EQ(payloads, 1u);
}

}  // namespace
}  // namespace writ::testing
