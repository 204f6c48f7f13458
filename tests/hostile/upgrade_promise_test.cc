// A third party's upgrade (the same bytes sent again in a stronger class, by anyone who
// holds them) never shortens what an earlier receipt promised: the stronger copy is held
// at least as long as the weaker one was (docs/retention.md, "Upgrading a retained
// delivery"; docs/security.md's table). Real `writ serve --data` and `writ send` processes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

json RetainedOf(const CommandRun& run) {
  for (const auto& r : run.json.value("receipts", json::array())) {
    if (r.value("rung", "") == "retained") return r;
  }
  ADD_FAILURE() << "no retained receipt: " << run.out << run.err;
  return json::object();
}

// "…, until 2026-12-01T10:04:38.454Z" -> the time; "" when no end is promised.
std::string PromisedEnd(const json& retained) {
  const std::string statement = retained.value("statement", "");
  const size_t at = statement.rfind("until ");
  return at == std::string::npos ? "" : statement.substr(at + 6);
}

bool Listed(const std::string& data, const std::string& id) {
  CommandRun listed = RunWrit({"store", "ls", "--data", data, "--json"});
  for (const auto& d : listed.json.value("deliveries", json::array())) {
    if (d.value("id", "") == id) return true;
  }
  return false;
}

// The case: alice's process-restart delivery has no time limit; an unsigned party
// holding the bytes upgrades it to power-loss, whose class has a 1 s time-to-live. Before,
// the upgraded copy was removed once that second had passed.
TEST(UpgradePromise, AnUpgradeByAnotherSenderKeepsAnUnlimitedPromise) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  const std::vector<std::string> args = {"--data", data, "--ttl", "power-loss=1s"};
  auto serve = Serve::StartWithStderr("tcp", args);
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 31, 30000);
  auto send = [&](const std::string& retention) {
    return RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", "alice-1",
                    "--retention", retention, "--json"});
  };
  CommandRun alice = send("process-restart");
  ASSERT_EQ(alice.exit_code, 0) << alice.err;
  EXPECT_EQ(PromisedEnd(RetainedOf(alice)), "") << "held until removed";
  CommandRun third = send("power-loss");
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(RetainedOf(third).value("retention", ""), "power-loss");
  EXPECT_EQ(PromisedEnd(RetainedOf(third)), "") << RetainedOf(third).dump();
  ASSERT_EQ(serve->Stop(), 0);
  std::this_thread::sleep_for(1500ms);  // past the power-loss time-to-live
  // The start-up sweep runs before the serve listens: it would have removed it by now.
  auto again = Serve::StartWithStderr("tcp", args);
  ASSERT_TRUE(again);
  EXPECT_TRUE(Listed(data, "alice-1")) << "the upgrade shortened alice's promise";
  EXPECT_EQ(again->Stop(), 0);
}

// A volatile copy promised for an hour, upgraded to a class promised for a second: the
// upgraded copy is promised for the hour.
TEST(UpgradePromise, AnUpgradeKeepsALongerTimeToLiveOfTheWeakerClass) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr(
      "tcp", {"--data", data, "--ttl", "volatile=1h", "--ttl", "power-loss=1s"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 32, 30000);
  auto send = [&](const std::string& retention) {
    return RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", "v-1", "--retention",
                    retention, "--json"});
  };
  CommandRun weak = send("volatile");
  ASSERT_EQ(weak.exit_code, 0) << weak.err;
  const std::string hour = PromisedEnd(RetainedOf(weak));
  ASSERT_NE(hour, "");
  CommandRun strong = send("power-loss");
  ASSERT_EQ(strong.exit_code, 0) << strong.err;
  const std::string end = PromisedEnd(RetainedOf(strong));
  ASSERT_NE(end, "") << RetainedOf(strong).dump();
  EXPECT_GE(end, hour) << "RFC 3339 UTC times compare as text";
  EXPECT_EQ(serve->Stop(), 0);
}

}  // namespace
}  // namespace writ::testing
