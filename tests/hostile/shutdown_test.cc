// A `writ serve` told to stop (issue #19): SIGTERM ends it within its drain timeout plus a
// small bound whatever its peers do, with exit status 0; senders see a refusal naming the
// shutdown; the data directory it leaves behind recovers cleanly. Each bound below is
// generous (drain + 5 s): it checks that the serve exits at all, not how fast.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "protocol/control_channel.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kDrain = 2s;
constexpr auto kBound = kDrain + 5s;

// A control connection that speaks the protocol only as far as a test needs.
struct Peer {
  protocol::ControlChannel channel;
  protocol::Message first;  // the receiver's hello, or its refusal

  static std::optional<Peer> Connect(const std::string& address) {
    auto hp = protocol::ParseHostPort(address);
    if (!hp.ok()) return std::nullopt;
    auto ch = protocol::ControlChannel::Connect(hp->first, hp->second, 10s);
    if (!ch.ok()) return std::nullopt;
    auto first = ch->Receive(10s);
    if (!first.ok()) return std::nullopt;
    return Peer{std::move(ch).value(), *first};
  }

  // The next grant or refusal, as text ("grant", "refused (REASON) ID: ...", "closed: ...").
  std::string Next(std::chrono::milliseconds timeout = 10s) {
    auto answer = channel.Receive(timeout);
    if (!answer.ok()) return "closed: " + answer.status().message();
    if (std::holds_alternative<protocol::Grant>(*answer)) return "grant";
    if (const auto* r = std::get_if<protocol::Refuse>(&*answer)) {
      return "refused (" + std::string(protocol::RefuseReasonName(r->reason)) + ") " +
             r->delivery_id + ": " + r->detail;
    }
    return "other";
  }
};

protocol::Announce AnnounceOf(const std::string& id, uint64_t bytes,
                              RetentionClass retention = RetentionClass::kVolatile) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = bytes;
  a.chunk_size = 1 << 20;
  a.rule = Rule::kXxh3_128;
  a.digest = std::vector<uint8_t>(16, 0x5a);
  a.retention = retention;
  return a;
}

// Sends `signal` to the serve; its exit code and how long it took to exit.
struct Exit {
  int code = -1;
  Clock::duration took{};
};
Exit Signal(Serve& serve, int signal) {
  const auto sent = Clock::now();
  serve.process().Kill(signal);
  auto code = serve.process().Wait(60s);
  return Exit{code.ok() ? *code : -1, Clock::now() - sent};
}

std::string Seconds(Clock::duration d) {
  return std::to_string(std::chrono::duration<double>(d).count()) + " s";
}

std::vector<std::string> Args(const std::string& data, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--data", data, "--drain-timeout", "2s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Restarts a serve on `data`: `id` is still retained and the directory checks clean, with
// no half-written payload left behind.
bool HasTmp(const std::string& data) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(data + "/payloads", ec)) {
    if (e.path().extension() == ".tmp") return true;
  }
  return false;
}

void ExpectRecoversWith(const std::string& data, const std::string& id) {
  EXPECT_FALSE(HasTmp(data)) << "a half-written payload was left in " << data;
  auto again = Serve::StartWithStderr("tcp", {"--data", data});
  ASSERT_TRUE(again) << "the serve does not start again on " << data;
  CommandRun q = RunWrit({"query", id, "--to", again->address(), "--json"});
  EXPECT_EQ(q.json.is_object() ? q.json.value("state", "") : "", "retained") << q.out << q.err;
  EXPECT_EQ(again->Stop(), 0);
  CommandRun check = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

// A delivery retained (process-restart) before the shutdown: its receipts must survive.
std::string RetainOne(const Serve& serve, const TempDir& dir) {
  WritePatternFile(dir.File("kept"), 7, 3 << 20);
  CommandRun sent = RunWrit({"send", dir.File("kept"), "--to", serve.address(), "--id", "kept",
                             "--retention", "process-restart", "--chunk-size", "1MiB"});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  return "kept";
}

TEST(Shutdown, IdleConnectionsAreClosedAndTheServeExitsAtOnce) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr("tcp", Args(data, {"--idle-timeout", "10m"}));
  ASSERT_TRUE(serve);
  const std::string kept = RetainOne(*serve, dir);
  std::vector<Peer> idle;
  for (int i = 0; i < 4; ++i) {
    auto p = Peer::Connect(serve->address());
    ASSERT_TRUE(p);
    ASSERT_TRUE(std::holds_alternative<protocol::Hello>(p->first));
    idle.push_back(std::move(*p));
  }
  const Exit exit = Signal(*serve, SIGTERM);
  EXPECT_EQ(exit.code, 0);
  EXPECT_LT(exit.took, kBound) << Seconds(exit.took);
  for (Peer& p : idle) {
    EXPECT_EQ(p.Next(5s).rfind("refused (shutting down) :", 0), 0u);
  }
  ExpectRecoversWith(data, kept);
}

// Senders that announced, were granted, committed and left without writing (issue #12's
// attack): before, SIGTERM left the serve waiting on them; now the drain deadline ends them.
TEST(Shutdown, AbandonedDeliveriesAreAbortedAtTheDrainDeadline) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr("tcp", Args(data, {"--grant-unused-timeout", "10m"}));
  ASSERT_TRUE(serve);
  const std::string kept = RetainOne(*serve, dir);
  for (int i = 0; i < 3; ++i) {
    auto p = Peer::Connect(serve->address());
    ASSERT_TRUE(p);
    const std::string id = "orphan-" + std::to_string(i);
    ASSERT_TRUE(p->channel.Send(AnnounceOf(id, 4 << 20, RetentionClass::kProcessRestart)).ok());
    ASSERT_EQ(p->Next(), "grant");
    ASSERT_TRUE(p->channel.Send(protocol::Commit{id, std::vector<uint8_t>(16, 0x5a), {}}).ok());
  }  // each gone, having written nothing
  const auto sent = Clock::now();
  serve->process().Kill(SIGTERM);
  ASSERT_TRUE(serve->ReadLineStartingWith("writ: shutting down: admitting nothing new", 10s).ok());
  // While it drains, a new connection is refused, naming the shutdown.
  auto late = Peer::Connect(serve->address());
  ASSERT_TRUE(late);
  const auto* refused = std::get_if<protocol::Refuse>(&late->first);
  ASSERT_NE(refused, nullptr) << "a connection was admitted while shutting down";
  EXPECT_EQ(refused->reason, protocol::RefuseReason::kShuttingDown);
  auto code = serve->process().Wait(60s);
  const auto took = Clock::now() - sent;
  EXPECT_EQ(code.ok() ? *code : -1, 0);
  EXPECT_LT(took, kBound) << Seconds(took);
  EXPECT_GE(took, kDrain) << "the deliveries in progress were not given the drain timeout";
  auto summary = serve->ReadLineStartingWith("writ: shut down:", 5s);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_NE(summary->find("3 (orphan-"), std::string::npos) << *summary;
  ExpectRecoversWith(data, kept);
}

// A live sender with a delivery in progress at the drain deadline reads a refusal naming
// its delivery and the shutdown; one that announces while the serve drains is refused.
TEST(Shutdown, ADeliveryInProgressIsRefusedNamingTheShutdown) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr("tcp", Args(data, {"--grant-unused-timeout", "10m"}));
  ASSERT_TRUE(serve);
  const std::string kept = RetainOne(*serve, dir);
  auto busy = Peer::Connect(serve->address());
  auto waiting = Peer::Connect(serve->address());
  ASSERT_TRUE(busy && waiting);
  ASSERT_TRUE(busy->channel.Send(AnnounceOf("busy", 4 << 20)).ok());
  ASSERT_EQ(busy->Next(), "grant");
  const auto sent = Clock::now();
  serve->process().Kill(SIGTERM);
  ASSERT_TRUE(serve->ReadLineStartingWith("writ: shutting down: admitting nothing new", 10s).ok());
  // `waiting` connected before the signal: its connection is closed, or its announce refused.
  const bool announced = waiting->channel.Send(AnnounceOf("late", 1 << 20)).ok();
  const std::string late = waiting->Next(5s);
  EXPECT_TRUE(late.find("(shutting down)") != std::string::npos ||
              (!announced && late.rfind("closed", 0) == 0))
      << late;
  std::string told = busy->Next(kBound);
  while (told == "grant") told = busy->Next(kBound);  // its other windows (the tail shrinks)
  EXPECT_EQ(told.rfind("refused (shutting down) busy: delivery busy aborted", 0), 0u) << told;
  auto code = serve->process().Wait(60s);
  const auto took = Clock::now() - sent;
  EXPECT_EQ(code.ok() ? *code : -1, 0);
  EXPECT_LT(took, kBound) << Seconds(took);
  ExpectRecoversWith(data, kept);
}

// The real `writ send` of a delivery the serve is receiving when told to stop: it either
// finishes within the drain timeout or exits with the refusal; it never hangs.
TEST(Shutdown, ARealSenderMidTransferFinishesOrIsToldWhy) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr("tcp", {"--data", data, "--drain-timeout", "500ms",
                                              "--window-pool", "8MiB", "--window-size", "1MiB"});
  ASSERT_TRUE(serve);
  const std::string kept = RetainOne(*serve, dir);
  WriteSparseFile(dir.File("big"), 512ull << 20);
  const std::string err = dir.File("send.err");
  auto sender =
      StartWrit({"send", dir.File("big"), "--to", serve->address(), "--id", "big", "--chunk-size",
                 "64KiB", "--depth", "2", "--retention", "process-restart"},
                err);
  ASSERT_TRUE(sender);
  // In progress once the receiver opened its payload file (after the sender's digest pass).
  for (int i = 0; i < 3000 && !HasTmp(data); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(HasTmp(data)) << "the transfer never started";
  const Exit exit = Signal(*serve, SIGTERM);
  EXPECT_EQ(exit.code, 0);
  EXPECT_LT(exit.took, 500ms + 5s) << Seconds(exit.took);
  // Its stdout is read meanwhile (a partial delivery's text is larger than a pipe holds).
  auto out = sender->ReadAll(30s);
  auto sent = sender->Wait(5s);
  if (!sent.ok()) sender->Kill(SIGKILL);
  ASSERT_TRUE(sent.ok()) << "the sender hangs after the serve shut down";
  std::ifstream err_file(err);
  const std::string sender_err((std::istreambuf_iterator<char>(err_file)), {});
  RecordProperty("sender", *sent == 0 ? "finished while draining" : sender_err);
  if (*sent != 0) {
    EXPECT_NE(sender_err.find("shutting down"), std::string::npos)
        << "exit " << *sent << ": " << sender_err;
  }
  ExpectRecoversWith(data, kept);
}

// A second signal ends the serve at once, its drain timeout notwithstanding; what was
// receipted is intact after the restart and nothing half-written confuses recovery.
TEST(Shutdown, ASecondSignalExitsAtOnceAndKeepsReceiptedDeliveries) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::StartWithStderr(
      "tcp", {"--data", data, "--drain-timeout", "10m", "--grant-unused-timeout", "10m"});
  ASSERT_TRUE(serve);
  const std::string kept = RetainOne(*serve, dir);
  auto p = Peer::Connect(serve->address());
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->channel.Send(AnnounceOf("held", 4 << 20, RetentionClass::kPowerLoss)).ok());
  ASSERT_EQ(p->Next(), "grant");
  serve->process().Kill(SIGTERM);
  ASSERT_TRUE(serve->ReadLineStartingWith("writ: shutting down: admitting nothing new", 10s).ok());
  const Exit exit = Signal(*serve, SIGINT);
  EXPECT_EQ(exit.code, 128 + SIGINT);
  EXPECT_LT(exit.took, 5s) << Seconds(exit.took);
  // A killed serve may leave a never-committed .tmp; the next start removes it.
  auto again = Serve::StartWithStderr("tcp", {"--data", data});
  ASSERT_TRUE(again);
  CommandRun q = RunWrit({"query", kept, "--to", again->address(), "--json"});
  EXPECT_EQ(q.json.is_object() ? q.json.value("state", "") : "", "retained") << q.out << q.err;
  EXPECT_EQ(again->Stop(), 0);
  ExpectRecoversWith(data, kept);
}

}  // namespace
}  // namespace writ::testing
