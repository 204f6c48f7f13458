// Two real processes on loopback: fabric_peer target and fabric_peer initiator.
// Each test reads the evidence lines they print and asserts what was observed.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "child_process.h"

namespace writ::fabric {
namespace {

using json = nlohmann::json;
using testing::ChildProcess;
using namespace std::chrono_literals;

constexpr uint64_t kRc233Bytes = 25165824;

std::string Probe(const std::string& provider) {
  auto proc = ChildProcess::Start({FABRIC_PEER, "probe", "--provider", provider});
  if (!proc.ok()) return "UNAVAILABLE " + proc.status().ToString();
  auto line = proc->ReadLine(30s);
  return line.ok() ? *line : "UNAVAILABLE " + line.status().ToString();
}

#define SKIP_UNLESS_AVAILABLE(provider)                                                   \
  do {                                                                                    \
    const std::string probe = Probe(provider);                                            \
    if (probe.rfind("AVAILABLE", 0) != 0) {                                               \
      GTEST_SKIP() << "provider " << provider << " has no device on this machine: " << probe; \
    }                                                                                     \
  } while (0)

struct Target {
  std::unique_ptr<ChildProcess> proc;
  std::string address;
  std::string region;

  std::string Ask(const std::string& command, const std::string& answer_prefix) {
    EXPECT_TRUE(proc->WriteLine(command).ok());
    auto line = proc->ReadLineStartingWith(answer_prefix, 30s);
    EXPECT_TRUE(line.ok()) << command << ": " << line.status().ToString();
    return line.ok() ? line->substr(answer_prefix.size()) : "";
  }

  std::vector<uint64_t> Notifications(size_t want, int timeout_ms) {
    return json::parse(Ask("wait-notifications " + std::to_string(want) + " " +
                               std::to_string(timeout_ms),
                           "NOTIFICATIONS "))
        .get<std::vector<uint64_t>>();
  }

  std::vector<json> Records() {
    EXPECT_TRUE(proc->WriteLine("records").ok());
    std::vector<json> records;
    for (;;) {
      auto line = proc->ReadLine(30s);
      if (!line.ok() || line->rfind("END", 0) == 0) break;
      if (line->rfind("RECORD ", 0) == 0) records.push_back(json::parse(line->substr(7)));
    }
    return records;
  }

  ~Target() {
    if (proc) {
      (void)proc->WriteLine("quit");
      auto code = proc->Wait(30s);
      EXPECT_TRUE(code.ok() && *code == 0) << "target did not close cleanly";
    }
  }
};

std::unique_ptr<Target> StartTarget(const std::string& provider, uint64_t window) {
  auto proc = ChildProcess::Start(
      {FABRIC_PEER, "target", "--provider", provider, "--window", std::to_string(window)});
  if (!proc.ok()) {
    ADD_FAILURE() << proc.status().ToString();
    return nullptr;
  }
  auto target = std::make_unique<Target>();
  target->proc = std::make_unique<ChildProcess>(std::move(proc).value());
  auto ready = target->proc->ReadLineStartingWith("READY ", 30s);
  if (!ready.ok()) {
    ADD_FAILURE() << "target never became ready: " << ready.status().ToString();
    return nullptr;
  }
  std::istringstream in(ready->substr(6));
  in >> target->address >> target->region;
  return target;
}

struct InitiatorRun {
  json posted;
  std::vector<json> records;
  json tally;
  std::string closed;
};

InitiatorRun RunInitiator(const std::string& provider, const Target& target,
                          const std::string& scenario, const std::string& level,
                          std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {FABRIC_PEER, "initiator", "--provider", provider,
                                   "--target",  target.address, "--region", target.region,
                                   "--scenario", scenario, "--level", level};
  argv.insert(argv.end(), extra.begin(), extra.end());
  InitiatorRun run;
  auto proc = ChildProcess::Start(argv);
  EXPECT_TRUE(proc.ok()) << proc.status().ToString();
  if (!proc.ok()) return run;
  auto out = proc->ReadAll(90s);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  auto code = proc->Wait(30s);
  EXPECT_TRUE(code.ok() && *code == 0) << "initiator output:\n" << (out.ok() ? *out : "");
  std::istringstream lines(out.ok() ? *out : "");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("POSTED ", 0) == 0) run.posted = json::parse(line.substr(7));
    if (line.rfind("RECORD ", 0) == 0) run.records.push_back(json::parse(line.substr(7)));
    if (line.rfind("TALLY ", 0) == 0) run.tally = json::parse(line.substr(6));
    if (line.rfind("CLOSED ", 0) == 0) run.closed = line.substr(7);
    if (line.rfind("FAIL ", 0) == 0) ADD_FAILURE() << line;
  }
  return run;
}

// On an error record, only request id, status, endpoint and provider error may be read.
void ExpectOnlyFourFieldsReadable(const json& record) {
  ASSERT_FALSE(record["ok"].get<bool>());
  EXPECT_NE(record["status"], "success");
  EXPECT_TRUE(record.contains("request_id"));
  EXPECT_TRUE(record.contains("endpoint"));
  EXPECT_TRUE(record["probe"]["provider_error"].contains("value"));
  for (const char* field : {"operation", "flags", "length", "remote_data"}) {
    EXPECT_EQ(record["probe"][field].value("error", ""), "wrong record")
        << field << " was readable on an error record: " << record.dump();
  }
  EXPECT_FALSE(record.contains("operation"));
  EXPECT_FALSE(record.contains("remote_data"));
}

class FabricProviders : public ::testing::TestWithParam<std::string> {};

std::string ProviderTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

// RC-233 at transport level: three distinct 8 MiB chunks into non-overlapping parts
// of one 24 MiB window, each a write-with-data.
TEST_P(FabricProviders, Rc233ThreeChunksThreeRecordsAllBytesPlaced) {
  SKIP_UNLESS_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), kRc233Bytes);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "rc233", "delivery");

  ASSERT_EQ(run.posted.size(), 3u);
  for (const auto& post : run.posted) {
    EXPECT_EQ(post["requested"], "delivery");
    EXPECT_EQ(post["granted"], "delivery") << "the level relied upon is recorded per request";
  }
  EXPECT_EQ(run.tally["records"], 3);
  EXPECT_EQ(run.tally["successes"], 3);
  EXPECT_EQ(run.tally["errors"], 0);
  std::set<uint64_t> ids;
  for (const auto& r : run.records) {
    EXPECT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["operation"], "rdma_write");
    ids.insert(r["request_id"].get<uint64_t>());
  }
  EXPECT_EQ(ids, (std::set<uint64_t>{1, 2, 3}));
  EXPECT_EQ(run.closed, "ok");

  std::vector<uint64_t> notes = target->Notifications(3, 10000);
  std::sort(notes.begin(), notes.end());
  EXPECT_EQ(notes, (std::vector<uint64_t>{233000, 233001, 233002}));
  EXPECT_EQ(target->Ask("verify", "VERIFY "), "ok " + std::to_string(kRc233Bytes));
  EXPECT_EQ(target->Records().size(), 3u) << "exactly three notifications, nothing else";
}

INSTANTIATE_TEST_SUITE_P(Loopback, FabricProviders,
                         ::testing::Values("tcp", "tcp;ofi_rxm", "shm"), ProviderTestName);

// Providers that check keys and report errors with FI_DELIVERY_COMPLETE.
class KeyCheckingProviders : public ::testing::TestWithParam<std::string> {};

TEST_P(KeyCheckingProviders, WrongKeyGivesAnErrorRecordWithOnlyValidFields) {
  SKIP_UNLESS_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "badkey", "delivery");
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(run.records[0]["request_id"], 1);
  ExpectOnlyFourFieldsReadable(run.records[0]);
  EXPECT_EQ(run.tally["successes"], 0);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
  EXPECT_TRUE(target->Notifications(1, 500).empty());
}

TEST_P(KeyCheckingProviders, WritePastTheWindowGivesAnErrorRecordAndPlacesNothing) {
  SKIP_UNLESS_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "overrun", "delivery");
  ASSERT_EQ(run.records.size(), 1u);
  ExpectOnlyFourFieldsReadable(run.records[0]);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

// The default completion on tcp/rxm fires when bytes reach the socket: a write with a
// wrong key "succeeds". This is why writ asks for delivery-complete and never treats
// an initiator's success as placement.
TEST_P(KeyCheckingProviders, DefaultCompletionReportsSuccessForAWriteThatPlacedNothing) {
  SKIP_UNLESS_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "badkey", "default");
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

// Several records in one poll, some of them errors: counted record by record.
TEST_P(KeyCheckingProviders, MixedBatchIsCountedByEachRecordsStatus) {
  SKIP_UNLESS_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "mixed", "delivery");
  ASSERT_EQ(run.records.size(), 4u);
  EXPECT_EQ(run.tally["records"], 4);
  EXPECT_EQ(run.tally["successes"], 2);
  EXPECT_EQ(run.tally["errors"], 2);
  std::map<uint64_t, bool> by_id;
  for (const auto& r : run.records) by_id[r["request_id"].get<uint64_t>()] = r["ok"].get<bool>();
  EXPECT_EQ(by_id, (std::map<uint64_t, bool>{{1, true}, {2, true}, {3, false}, {4, false}}));
  for (const auto& r : run.records) {
    if (!r["ok"].get<bool>()) ExpectOnlyFourFieldsReadable(r);
  }
  std::vector<uint64_t> notes = target->Notifications(2, 5000);
  std::sort(notes.begin(), notes.end());
  EXPECT_EQ(notes, (std::vector<uint64_t>{1, 2})) << "only the two good writes notified";
}

INSTANTIATE_TEST_SUITE_P(Loopback, KeyCheckingProviders, ::testing::Values("tcp", "tcp;ofi_rxm"),
                         ProviderTestName);

// shm, measured: its fast path never checks the remote key. A plain write with a wrong
// key reports success and overwrites the target's memory. Memory protection between
// processes on shm is the operating system's (same user), not the key's.
TEST(Shm, WrongKeyIsNotCheckedAndOverwritesTargetMemory) {
  SKIP_UNLESS_AVAILABLE("shm");
  auto target = StartTarget("shm", 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator("shm", *target, "badkey-large", "default", {"--no-data", "1"});
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "no 0")
      << "if this fails, shm started checking keys: update docs/architecture.md";
}

// shm with delivery-complete and a wrong key: the error never surfaces at the
// initiator (no record at all) and nothing is placed. Silence is not failure, and not
// success either: writ's sender must bound its wait.
TEST(Shm, WrongKeyWithDeliveryCompleteYieldsNoRecordAndNoPlacement) {
  SKIP_UNLESS_AVAILABLE("shm");
  auto target = StartTarget("shm", 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run =
      RunInitiator("shm", *target, "badkey-large", "delivery", {"--wait-ms", "2000"});
  EXPECT_EQ(run.tally["successes"], 0);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
  EXPECT_TRUE(target->Notifications(1, 200).empty());
}

// shm, plain write past the end of the window: reported as success, and the part that
// falls inside the window is overwritten.
TEST(Shm, WritePastTheWindowReportsSuccessAndPlacesTheInRangePart) {
  SKIP_UNLESS_AVAILABLE("shm");
  const uint64_t window = 1 << 20;
  auto target = StartTarget("shm", window);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator("shm", *target, "overrun", "default", {"--no-data", "1"});
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "no " + std::to_string(window - 4096));
}

TEST(Verbs, Rc233WhereADeviceExists) {
  SKIP_UNLESS_AVAILABLE("verbs");
  auto target = StartTarget("verbs", kRc233Bytes);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator("verbs", *target, "rc233", "delivery");
  EXPECT_EQ(run.tally["records"], 3);
  EXPECT_EQ(run.tally["successes"], 3);
  for (const auto& post : run.posted) EXPECT_EQ(post["granted"], "transmit");
  EXPECT_EQ(target->Notifications(3, 10000).size(), 3u);
  EXPECT_EQ(target->Ask("verify", "VERIFY "), "ok " + std::to_string(kRc233Bytes));
}

}  // namespace
}  // namespace writ::fabric
