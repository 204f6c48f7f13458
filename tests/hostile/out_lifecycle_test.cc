// `serve --out DIR` files outlive nothing: an expiry and `store rm --out` remove a
// delivery's file and its receipts file, and a file with other content and no retained
// delivery behind it is moved aside (logged) instead of refusing the id "conflicting id".
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string OutContents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> OutEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutLifecycle, AnExpiryRemovesTheFileAndItsReceipts) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  fs::create_directory(dir.File("out"));
  WritePatternFile(dir.File("data"), 3, 64 << 10);
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("id"), "--out", dir.File("out"), "--ttl", "volatile=1s"});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "short"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  ASSERT_TRUE(fs::exists(dir.File("out/short")));
  auto line = serve->ReadLineStartingWith("writ: out: removed ", 30s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_NE(line->find("short.receipts.json"), std::string::npos) << *line;
  EXPECT_TRUE(OutEntries(dir.File("out")).empty()) << "both files go with the delivery";
}

TEST(OutLifecycle, StoreRmWithOutRemovesTheFiles) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  fs::create_directory(dir.File("out"));
  fs::create_directory(dir.File("data-dir"));
  WritePatternFile(dir.File("data"), 4, 64 << 10);
  {
    auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--data", dir.File("data-dir"),
                                      "--out", dir.File("out")});
    ASSERT_TRUE(serve);
    CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "kept",
                               "--retention", "power-loss"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
    EXPECT_EQ(serve->Stop(), 0);
  }
  ASSERT_EQ(OutEntries(dir.File("out")), (std::vector<std::string>{"kept", "kept.receipts.json"}));
  CommandRun rm =
      RunWrit({"store", "rm", "kept", "--data", dir.File("data-dir"), "--out", dir.File("out")});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_NE(rm.err.find("writ: out: removed "), std::string::npos) << rm.err;
  EXPECT_TRUE(OutEntries(dir.File("out")).empty());
}

// A volatile delivery lost at a restart leaves its files; new content under its id is
// delivered, and the old file is moved aside, not refused as a conflict.
TEST(OutLifecycle, AStaleFileWithNoDeliveryBehindItNeverBlocksTheId) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  fs::create_directory(dir.File("out"));
  WritePatternFile(dir.File("old"), 5, 64 << 10);
  WritePatternFile(dir.File("new"), 6, 64 << 10);
  {
    auto serve = Serve::Start("tcp", {"--identity", dir.File("id"), "--out", dir.File("out")});
    ASSERT_TRUE(serve);
    CommandRun sent = RunWrit({"send", dir.File("old"), "--to", serve->address(), "--id", "x"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
    EXPECT_EQ(serve->Stop(), 0);  // the volatile delivery is gone; its files stay
  }
  auto serve =
      Serve::StartWithStderr("tcp", {"--identity", dir.File("id"), "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("new"), "--to", serve->address(), "--id", "x"});
  ASSERT_EQ(sent.exit_code, 0) << "a stale file must not block the id: " << sent.err;
  EXPECT_EQ(OutContents(dir.File("out/x")), OutContents(dir.File("new")));
  auto line = serve->ReadLineStartingWith("writ: out: moved aside a stale output of x", 10s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  int stale = 0;
  for (const auto& name : OutEntries(dir.File("out"))) {
    if (name.rfind(".x.stale-", 0) == 0) {
      ++stale;
      EXPECT_EQ(OutContents(dir.File("out/" + name)), OutContents(dir.File("old")));
    }
  }
  EXPECT_EQ(stale, 1) << "the old payload is kept aside, hidden";
}

}  // namespace
}  // namespace writ::testing
