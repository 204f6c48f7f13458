// A retained delivery's lifecycle through the real binaries: `writ serve --ttl` (the
// retained receipt names the time, the delivery is answered until then and swept after,
// the removal logged), `writ store rm` and its exit codes, `--volatile-capacity`; a serve
// whose fabric stops making progress exits 4.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "requirement.h"
#include "writ/receipt.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

json RetainedReceipt(const CommandRun& run) {
  for (const auto& r : run.json.value("receipts", json::array())) {
    if (r.value("rung", "") == "retained") return r;
  }
  ADD_FAILURE() << "no retained receipt: " << run.out << run.err;
  return json::object();
}

// "…, until 2026-12-01T10:04:38.454Z" -> the time.
std::string PromisedUntil(const json& retained) {
  const std::string statement = retained.value("statement", "");
  const size_t at = statement.rfind("until ");
  return at == std::string::npos ? "" : statement.substr(at + 6);
}

TEST(Lifecycle, AVolatileTimeToLiveIsNamedAnsweredUntilThenAndSweptAfter) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  auto serve =
      Serve::StartWithStderr("tcp", {"--identity", dir.File("server"), "--ttl", "volatile=1s"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 1, 100000);
  CommandRun sent =
      RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", "ttl-1", "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const json retained = RetainedReceipt(sent);
  const std::string until = PromisedUntil(retained);
  EXPECT_NE(retained["statement"].get<std::string>().find("held for at least 1s after its commit"),
            std::string::npos)
      << retained.dump();
  EXPECT_NE(retained["promise_after_failure"].get<std::string>().find(
                "held for at least 1s after its commit, until " + until + " (its time-to-live)"),
            std::string::npos)
      << retained.dump();
  ASSERT_EQ(until.size(), 24u) << "an RFC 3339 time with milliseconds: " << until;
  {  // The receipt with its promised time is signed like any other.
    std::ofstream(dir.File("retained.json")) << retained.dump();
    CommandRun verified = RunWrit({"verify", dir.File("retained.json")});
    EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  }
  // Answered until the promised time, gone after it: never unknown while it is promised
  // (the times compare as strings: same format, both UTC).
  bool answered = false, gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    CommandRun query = RunWrit({"query", "ttl-1", "--to", serve->address()});
    const std::string now = NowRfc3339();
    if (query.exit_code == 0) {
      answered = true;
    } else {
      ASSERT_EQ(query.exit_code, 1) << query.err;
      EXPECT_GE(now, until) << "removed before the time its receipt promised";
      gone = true;
    }
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone) << "still held well after " << until;
  auto logged = serve->ReadLineStartingWith("writ: store: removed delivery ttl-1", 30s);
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_NE(logged->find("(volatile, 100000 bytes): its time-to-live passed"), std::string::npos)
      << *logged;
  if (!answered) std::cerr << "note: the first query came after " << until << "\n";
  EXPECT_EQ(serve->Stop(), 0);
}

TEST(Lifecycle, StoreRmRefusesWhileServedAndBeforeThePromiseRemovesWithForceAndSaysSo) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  const std::string data = dir.File("data");
  const std::vector<std::string> serve_args = {"--data", data, "--ttl", "process-restart=1h"};
  auto serve = Serve::StartWithStderr("tcp", serve_args);
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 2, 50000);
  for (const std::string cls : {"process-restart", "power-loss"}) {
    CommandRun sent = RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", cls,
                               "--retention", cls, "--json"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
  }
  CommandRun held = RunWrit({"query", "process-restart", "--to", serve->address()});
  EXPECT_EQ(held.exit_code, 0) << "held for an hour: answered" << held.err;
  CommandRun locked = RunWrit({"store", "rm", "power-loss", "--data", data});
  EXPECT_EQ(locked.exit_code, 6) << locked.err;
  EXPECT_NE(locked.err.find("in use by another writ process"), std::string::npos) << locked.err;
  ASSERT_EQ(serve->Stop(), 0);

  CommandRun unknown = RunWrit({"store", "rm", "nope", "--data", data});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("nope is not retained in"), std::string::npos) << unknown.err;
  CommandRun no_dir = RunWrit({"store", "rm", "x", "--data", dir.File("missing")});
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("missing"))) << "rm never creates a directory";

  // No time-to-live for power-loss: its receipt promised no time; removed, logged on stderr.
  CommandRun removed = RunWrit({"store", "rm", "power-loss", "--data", data});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_NE(removed.err.find("removed delivery power-loss (power-loss, 50000 bytes): removed by "
                             "writ store rm"),
            std::string::npos)
      << removed.err;
  // process-restart is promised for an hour: refused, then forced with the break said.
  CommandRun early = RunWrit({"store", "rm", "process-restart", "--data", data});
  EXPECT_EQ(early.exit_code, 3) << early.err;
  EXPECT_NE(early.err.find("promises it is held until"), std::string::npos) << early.err;
  CommandRun forced = RunWrit({"store", "rm", "process-restart", "--data", data, "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("PROMISE BROKEN"), std::string::npos) << forced.err;

  CommandRun listed = RunWrit({"store", "ls", "--data", data, "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.json["deliveries"], json::array()) << listed.out;
  CommandRun checked = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  auto again = Serve::StartWithStderr("tcp", serve_args);
  ASSERT_TRUE(again);
  CommandRun gone = RunWrit({"query", "power-loss", "--to", again->address()});
  EXPECT_EQ(gone.exit_code, 1) << "removed for good, also after a restart";
  EXPECT_EQ(again->Stop(), 0);
}

TEST(Lifecycle, ADurableDeliveryThatExpiredWhileNoServeRanIsRemovedAtStart) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr("tcp", {"--data", data, "--ttl", "power-loss=1s"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("f"), 5, 20000);
  CommandRun sent = RunWrit({"send", dir.File("f"), "--to", serve->address(), "--id", "e",
                             "--retention", "power-loss", "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const std::string until = PromisedUntil(RetainedReceipt(sent));
  ASSERT_EQ(serve->Stop(), 0);
  // Wait (on the clock, not for a fixed time) until the promised time has passed.
  while (NowRfc3339() <= until) std::this_thread::sleep_for(100ms);
  auto again = Serve::StartWithStderr("tcp", {"--data", data, "--ttl", "power-loss=1s"});
  ASSERT_TRUE(again);
  // The start-up sweep runs before the serve listens: its line is there already.
  auto logged = again->ReadLineStartingWith("writ: store: removed delivery e", 30s);
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_NE(logged->find("(power-loss, 20000 bytes): its time-to-live passed"), std::string::npos)
      << *logged;
  CommandRun listed = RunWrit({"store", "ls", "--data", data, "--json"});
  EXPECT_EQ(listed.json["deliveries"], json::array()) << listed.out;
  EXPECT_EQ(again->Stop(), 0);
}

TEST(Lifecycle, VolatileCapacityRefusesWhatDoesNotFit) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  auto serve =
      Serve::Start("tcp", {"--identity", dir.File("server"), "--volatile-capacity", "64KiB"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("big"), 3, 100000);
  CommandRun refused = RunWrit({"send", dir.File("big"), "--to", serve->address()});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("capacity of 65536 bytes"), std::string::npos) << refused.err;
  // The capacity holds each delivery's receipts too (a slot of 8 KiB for these).
  WritePatternFile(dir.File("tight"), 5, 60000);
  CommandRun tight = RunWrit({"send", dir.File("tight"), "--to", serve->address()});
  EXPECT_EQ(tight.exit_code, 3) << tight.err;
  EXPECT_NE(tight.err.find("the receipts of delivery"), std::string::npos) << tight.err;
  WritePatternFile(dir.File("small"), 4, 50000);
  CommandRun fits = RunWrit({"send", dir.File("small"), "--to", serve->address()});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(serve->Stop(), 0);
}

// A serve whose fabric stops making progress completes no write any more: it says so and
// exits 4 (a transport failure), for its supervisor to restart it, instead of staying up
// and letting every delivery stall to its timeout.
TEST(Lifecycle, AServeWhoseFabricStopsSaysSoAndExitsFourForARestart) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("server"), "--test-fail-polls-on-usr2"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("d"), 5, 4096);
  CommandRun before = RunWrit({"send", dir.File("d"), "--to", serve->address(), "--id", "before"});
  ASSERT_EQ(before.exit_code, 0) << before.err;

  serve->process().Kill(SIGUSR2);  // every poll of its fabric fails from now on
  auto said = serve->ReadLineStartingWith("writ: the fabric stopped making progress: ", 30s);
  ASSERT_TRUE(said.ok()) << said.status().ToString();
  EXPECT_NE(said->find("test fault injected"), std::string::npos) << *said;
  auto exited = serve->process().Wait(60s);
  ASSERT_TRUE(exited.ok()) << exited.status().ToString();
  EXPECT_EQ(*exited, 4);
}

}  // namespace
}  // namespace writ::testing
