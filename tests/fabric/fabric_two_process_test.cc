// Two real processes on loopback: fabric_peer target and fabric_peer initiator.
// Each test reads the evidence lines they print and asserts what was observed.
#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "child_process.h"
#include "provider_matrix.h"
#include "requirement.h"

namespace writ::fabric {
namespace {

using json = nlohmann::json;
using testing::ChildProcess;
using namespace std::chrono_literals;

constexpr uint64_t kRc233Bytes = 25165824;

std::string Probe(const std::string& provider, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {FABRIC_PEER, "probe", "--provider", provider};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto proc = ChildProcess::Start(argv);
  if (!proc.ok()) return "UNAVAILABLE " + proc.status().ToString();
  auto line = proc->ReadLine(30s);
  return line.ok() ? *line : "UNAVAILABLE " + line.status().ToString();
}

// tcp, tcp;ofi_rxm and shm are expected on every machine this runs on: missing is a failure.
#define REQUIRE_AVAILABLE(provider)                                                              \
  do {                                                                                           \
    const std::string probe = Probe(provider);                                                   \
    REQUIRE_OR_FAIL(probe.rfind("AVAILABLE", 0) == 0, "provider " << provider << ": " << probe); \
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
    return json::parse(
               Ask("wait-notifications " + std::to_string(want) + " " + std::to_string(timeout_ms),
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

std::unique_ptr<Target> StartTarget(const std::string& provider, uint64_t window,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {FABRIC_PEER, "target",   "--provider",
                                   provider,    "--window", std::to_string(window)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto proc = ChildProcess::Start(argv);
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
  std::vector<std::string> argv = {FABRIC_PEER,  "initiator",    "--provider", provider,
                                   "--target",   target.address, "--region",   target.region,
                                   "--scenario", scenario,       "--level",    level};
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

// ---------------------------------------------------------------------------------
// verbs: RC over a real RDMA device. On this project's machines that is Soft-RoCE
// (rxe0) inside the qemu guest of scripts/guest/run-in-guest.sh, run by the CTest label
// `verbs` (tests/verbs) with --gtest_filter=Verbs*. rdma_cm cannot bind a verbs device
// to 127.0.0.1: both sides use the address of the device's netdev, taken from
// WRIT_VERBS_NODE or, in the guest, WRIT_GUEST_RXE_ADDRESS.

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string VerbsNode() {
  const std::string node = Env("WRIT_VERBS_NODE");
  return node.empty() ? Env("WRIT_GUEST_RXE_ADDRESS") : node;
}

std::vector<std::string> VerbsNodeFlag() { return {"--node", VerbsNode()}; }

// Inside the guest (or with WRIT_REQUIRE_VERBS=1) a missing device is a failure: a
// verbs test that skipped there would pass silently.
bool VerbsRequired() { return Env("WRIT_GUEST") == "1" || Env("WRIT_REQUIRE_VERBS") == "1"; }

// One probe per provider and test process: under the guest's emulated CPU each costs
// seconds (the verbs provider enumerates devices and addresses on every fi_getinfo).
std::string VerbsProbe(const std::string& provider) {
  static std::map<std::string, std::string> probes;
  auto it = probes.find(provider);
  if (it == probes.end()) {
    const std::string result = VerbsNode().empty() ? "UNAVAILABLE no address: set WRIT_VERBS_NODE"
                                                   : Probe(provider, VerbsNodeFlag());
    it = probes.emplace(provider, result).first;
  }
  return it->second;
}

#define REQUIRE_VERBS(provider)                                                           \
  do {                                                                                    \
    const std::string probe = VerbsProbe(provider);                                       \
    if (probe.rfind("AVAILABLE", 0) != 0) {                                               \
      if (VerbsRequired()) FAIL() << "verbs is required here but " << probe;              \
      GTEST_SKIP() << "provider " << provider << " has no device here (" << probe         \
                   << "); the `verbs` CTest label runs these under Soft-RoCE in a guest"; \
    }                                                                                     \
  } while (0)

std::unique_ptr<Target> StartVerbsTarget(const std::string& provider, uint64_t window) {
  return StartTarget(provider, window, VerbsNodeFlag());
}

InitiatorRun RunVerbsInitiator(const std::string& provider, const Target& target,
                               const std::string& scenario, const std::string& level) {
  return RunInitiator(provider, target, scenario, level, VerbsNodeFlag());
}

// IBV_WC_REM_ACCESS_ERR, carried as the provider error of the record.
constexpr int kIbvRemoteAccessError = 10;

std::string ProviderTestName(const ::testing::TestParamInfo<std::string>& info) {
  return testing::ProviderName(info);
}

// ---------------------------------------------------------------------------------
// One matrix over tcp, tcp;ofi_rxm, shm, verbs and verbs;ofi_rxm: the same body for
// every provider, its expectations from testing::AllProviders() (the table in
// docs/architecture.md). Here the verbs cases are filtered out; the `verbs` CTest label
// runs them in the Soft-RoCE guest (--gtest_filter='*/verbs*:Verbs*').
class ProviderMatrix : public ::testing::TestWithParam<testing::ProviderCase> {
 protected:
  const testing::ProviderCase& Case() const { return GetParam(); }
  std::vector<std::string> NodeFlag() const {
    return Case().needs_rdma_device ? VerbsNodeFlag() : std::vector<std::string>{};
  }
  std::unique_ptr<Target> Start(uint64_t window) {
    return StartTarget(Case().name, window, NodeFlag());
  }
  InitiatorRun Run(const Target& target, const std::string& scenario, const std::string& level,
                   std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = NodeFlag();
    flags.insert(flags.end(), extra.begin(), extra.end());
    return RunInitiator(Case().name, target, scenario, level, flags);
  }
};

// The providers that check keys and window bounds.
class KeyCheckingMatrix : public ProviderMatrix {};

#define REQUIRE_PROVIDER(c)        \
  do {                             \
    if ((c).needs_rdma_device) {   \
      REQUIRE_VERBS((c).name);     \
    } else {                       \
      REQUIRE_AVAILABLE((c).name); \
    }                              \
  } while (0)

// RC-233 at transport level: three distinct 8 MiB chunks into non-overlapping parts
// of one 24 MiB window, each a write-with-data. Delivery-complete is requested; the
// level granted (and recorded as relied upon) is the provider's: transmit on verbs.
TEST_P(ProviderMatrix, Rc233ThreeChunksThreeRecordsAllBytesPlaced) {
  REQUIRE_PROVIDER(Case());
  auto target = Start(kRc233Bytes);
  ASSERT_TRUE(target);
  InitiatorRun run = Run(*target, "rc233", "delivery");

  ASSERT_EQ(run.posted.size(), 3u);
  for (const auto& post : run.posted) {
    EXPECT_EQ(post["requested"], "delivery");
    EXPECT_EQ(post["granted"], Case().delivery_granted)
        << "the level relied upon is recorded per request";
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

  std::vector<uint64_t> notes = target->Notifications(3, 20000);
  std::sort(notes.begin(), notes.end());
  EXPECT_EQ(notes, (std::vector<uint64_t>{233000, 233001, 233002}));
  EXPECT_EQ(target->Ask("verify", "VERIFY "), "ok " + std::to_string(kRc233Bytes));
  EXPECT_EQ(target->Records().size(), 3u) << "exactly three notifications, nothing else";
}

// A wrong remote key with delivery-complete asked: where keys are checked, one error
// record with only its four valid fields (and the provider error where it is fixed);
// on shm no record at all. Nothing is placed and nothing notified either way.
TEST_P(ProviderMatrix, WrongKeyWithDeliveryCompletePlacesNothing) {
  REQUIRE_PROVIDER(Case());
  auto target = Start(1 << 20);
  ASSERT_TRUE(target);
  if (Case().wrong_key == testing::WrongKeyOutcome::kSilence) {
    // The large write takes shm's path that would check keys if any did.
    InitiatorRun run = Run(*target, "badkey-large", "delivery", {"--wait-ms", "2000"});
    EXPECT_TRUE(run.records.empty()) << "shm reports no record for a refused write";
    EXPECT_EQ(run.tally["successes"], 0);
  } else {
    InitiatorRun run = Run(*target, "badkey", "delivery");
    ASSERT_EQ(run.records.size(), 1u)
        << "one request, one record: flushed receives are not records";
    EXPECT_EQ(run.records[0]["request_id"], 1);
    ExpectOnlyFourFieldsReadable(run.records[0]);
    if (Case().wrong_key_errno) {
      EXPECT_EQ(run.records[0]["prov_errno"], *Case().wrong_key_errno) << run.records[0].dump();
    }
    EXPECT_EQ(run.tally["successes"], 0);
  }
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
  EXPECT_TRUE(target->Notifications(1, 500).empty());
}

// Good, good, wrong key, good in one batch: counted record by record. On RC (verbs) the
// wrong key puts the connection into the error state, so the fourth write is flushed
// (its own error record, FI_ECANCELED) although nothing was wrong with it.
TEST_P(KeyCheckingMatrix, MixedBatchIsCountedByEachRecordsStatus) {
  REQUIRE_PROVIDER(Case());
  auto target = Start(1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = Run(*target, "mixed", "delivery");
  ASSERT_EQ(run.records.size(), 4u);
  EXPECT_EQ(run.tally["records"], 4);
  EXPECT_EQ(run.tally["successes"], 2);
  EXPECT_EQ(run.tally["errors"], 2);
  std::map<uint64_t, json> by_id;
  for (const auto& r : run.records) by_id[r["request_id"].get<uint64_t>()] = r;
  ASSERT_EQ(by_id.size(), 4u);
  EXPECT_TRUE(by_id[1]["ok"].get<bool>());
  EXPECT_TRUE(by_id[2]["ok"].get<bool>());
  ExpectOnlyFourFieldsReadable(by_id[3]);
  ExpectOnlyFourFieldsReadable(by_id[4]);
  if (Case().wrong_key_errno) {
    EXPECT_EQ(by_id[3]["prov_errno"], *Case().wrong_key_errno);
  }
  if (Case().flushes_after_error) {
    EXPECT_EQ(by_id[4]["status"], "FI_ECANCELED") << "flushed after the connection failed";
  }
  std::vector<uint64_t> notes = target->Notifications(2, 10000);
  std::sort(notes.begin(), notes.end());
  EXPECT_EQ(notes, (std::vector<uint64_t>{1, 2})) << "only the two good writes notified";
}

// The key is right but the write runs past the registered window: refused whole.
TEST_P(KeyCheckingMatrix, WritePastTheWindowGivesAnErrorRecordAndPlacesNothing) {
  REQUIRE_PROVIDER(Case());
  auto target = Start(1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = Run(*target, "overrun", "delivery");
  ASSERT_EQ(run.records.size(), 1u);
  ExpectOnlyFourFieldsReadable(run.records[0]);
  if (Case().wrong_key_errno) {
    EXPECT_EQ(run.records[0]["prov_errno"], *Case().wrong_key_errno);
  }
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

INSTANTIATE_TEST_SUITE_P(Loopback, ProviderMatrix, ::testing::ValuesIn(testing::AllProviders()),
                         testing::CaseName);
INSTANTIATE_TEST_SUITE_P(Loopback, KeyCheckingMatrix,
                         ::testing::ValuesIn(testing::ProvidersWhere(
                             [](const testing::ProviderCase& c) { return c.checks_keys; })),
                         testing::CaseName);

// Providers that check keys and report errors with FI_DELIVERY_COMPLETE.
class KeyCheckingProviders : public ::testing::TestWithParam<std::string> {};

// A window is revoked by closing its registration: a write with the old key must fail
// and place nothing (writ revokes every window before its memory is reused).
TEST_P(KeyCheckingProviders, WriteWithARevokedKeyFailsAndPlacesNothing) {
  REQUIRE_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  ASSERT_EQ(target->Ask("revoke", "REVOKED "), "ok");
  InitiatorRun run = RunInitiator(GetParam(), *target, "good", "delivery");
  ASSERT_EQ(run.records.size(), 1u);
  ExpectOnlyFourFieldsReadable(run.records[0]);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
  EXPECT_TRUE(target->Notifications(1, 500).empty());
}

// The default completion on tcp/rxm fires when bytes reach the socket: a write with a
// wrong key "succeeds". This is why writ asks for delivery-complete and never treats
// an initiator's success as placement.
TEST_P(KeyCheckingProviders, DefaultCompletionReportsSuccessForAWriteThatPlacedNothing) {
  REQUIRE_AVAILABLE(GetParam());
  auto target = StartTarget(GetParam(), 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator(GetParam(), *target, "badkey", "default");
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

INSTANTIATE_TEST_SUITE_P(Loopback, KeyCheckingProviders, ::testing::Values("tcp", "tcp;ofi_rxm"),
                         ProviderTestName);

// shm, measured: its fast path never checks the remote key. A plain write with a wrong
// key reports success and overwrites the target's memory. Memory protection between
// processes on shm is the operating system's (same user), not the key's.
TEST(Shm, WrongKeyIsNotCheckedAndOverwritesTargetMemory) {
  REQUIRE_AVAILABLE("shm");
  auto target = StartTarget("shm", 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator("shm", *target, "badkey-large", "default", {"--no-data", "1"});
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "no 0")
      << "if this fails, shm started checking keys: update docs/architecture.md";
}

// shm, plain write past the end of the window: reported as success, and the part that
// falls inside the window is overwritten.
TEST(Shm, WritePastTheWindowReportsSuccessAndPlacesTheInRangePart) {
  REQUIRE_AVAILABLE("shm");
  const uint64_t window = 1 << 20;
  auto target = StartTarget("shm", window);
  ASSERT_TRUE(target);
  InitiatorRun run = RunInitiator("shm", *target, "overrun", "default", {"--no-data", "1"});
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_TRUE(run.records[0]["ok"].get<bool>());
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "no " + std::to_string(window - 4096));
}

class VerbsProviders : public ::testing::TestWithParam<std::string> {};

// What the provider demands and grants: posted receives for write-with-data on verbs
// itself (FI_RX_CQ_DATA; rxm posts its own), local registration (FI_MR_LOCAL), and
// transmit-complete at most -- also through ofi_rxm, which passes writes to verbs.
TEST_P(VerbsProviders, ProviderDemandsLocalRegistrationAndGrantsTransmitAtMost) {
  REQUIRE_VERBS(GetParam());
  const std::string probe = VerbsProbe(GetParam());
  const json info = json::parse(probe.substr(probe.find(' ') + 1));
  std::cout << "verbs probe: " << info.dump() << std::endl;
  EXPECT_EQ(info["name"], GetParam());
  const std::string device = Env("WRIT_GUEST_RXE_DEVICE");
  if (!device.empty()) {
    EXPECT_EQ(info["domain"], device);
  }
  EXPECT_NE(info["mr_mode"].get<uint64_t>() & FI_MR_LOCAL, 0u);
  EXPECT_EQ(info["rx_cq_data"].get<bool>(), GetParam() == "verbs");
  const auto levels = info["levels"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(levels.begin(), levels.end(), "transmit"), levels.end());
  EXPECT_EQ(std::find(levels.begin(), levels.end(), "delivery"), levels.end())
      << "verbs offers no delivery-complete; a write must not record it";
}

INSTANTIATE_TEST_SUITE_P(Verbs, VerbsProviders, ::testing::Values("verbs", "verbs;ofi_rxm"),
                         ProviderTestName);

// Two facts about verbs itself, checked on the plain provider only (ofi_rxm passes
// writes through to it; each guest test costs seconds under emulation).

// Unlike tcp, verbs' default completion already waits for the responder's ACK: the
// wrong key is reported even without asking for a completion level.
TEST(VerbsRc, DefaultCompletionStillReportsTheRemoteAccessError) {
  REQUIRE_VERBS("verbs");
  auto target = StartVerbsTarget("verbs", 1 << 20);
  ASSERT_TRUE(target);
  InitiatorRun run = RunVerbsInitiator("verbs", *target, "badkey", "default");
  ASSERT_EQ(run.records.size(), 1u);
  EXPECT_EQ(run.posted[0]["granted"], "default");
  ExpectOnlyFourFieldsReadable(run.records[0]);
  EXPECT_EQ(run.records[0]["prov_errno"], kIbvRemoteAccessError);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

// A window is revoked by closing its registration. On verbs a registration pins pages, and
// libfabric's registration cache (on by default) keeps a closed one, and its key, alive for
// reuse: writ turns the cache off before libfabric loads (docs/security.md, "Registration
// cache"), so the responder must refuse the old key and nothing may land.
TEST(VerbsRc, WriteWithARevokedKeyIsRefusedAndPlacesNothing) {
  REQUIRE_VERBS("verbs");
  auto target = StartVerbsTarget("verbs", 1 << 20);
  ASSERT_TRUE(target);
  ASSERT_EQ(target->Ask("revoke", "REVOKED "), "ok");
  InitiatorRun run = RunVerbsInitiator("verbs", *target, "good", "default");
  ASSERT_EQ(run.records.size(), 1u);
  ExpectOnlyFourFieldsReadable(run.records[0]);
  EXPECT_EQ(run.records[0]["prov_errno"], kIbvRemoteAccessError);
  EXPECT_EQ(target->Ask("untouched", "UNTOUCHED "), "yes");
}

}  // namespace
}  // namespace writ::fabric
