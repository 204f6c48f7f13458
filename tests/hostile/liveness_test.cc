// Liveness and admission (issue #12): a sender that leaves, stalls or floods cannot hold a
// receiver's deliveries, windows, capacity, descriptors or connections for longer than the
// timeouts and limits the serve was started with. Every serve here runs with short timeouts
// given by flags; the attackers speak the control protocol directly.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "protocol/socket.h"
#include "receipt/identity.h"
#include "requirement.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

// A control connection that follows the protocol only as far as an attack needs.
struct Attacker {
  protocol::ControlChannel channel;

  // From `source` ("127.0.0.2"; empty: any) to the serve at `address`. The first message
  // the receiver sends (its hello, or a refusal) is stored in `first`.
  static std::optional<Attacker> Connect(const std::string& address, protocol::Message* first,
                                         const std::string& source = "") {
    auto hp = protocol::ParseHostPort(address);
    if (!hp.ok()) return std::nullopt;
    protocol::Socket sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (!source.empty()) {
      inet_pton(AF_INET, source.c_str(), &addr.sin_addr);
      if (::bind(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        return std::nullopt;
    }
    inet_pton(AF_INET, hp->first.c_str(), &addr.sin_addr);
    addr.sin_port = htons(hp->second);
    if (::connect(sock.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      return std::nullopt;
    auto ch = protocol::ControlChannel::Adopt(std::move(sock));
    if (!ch.ok()) return std::nullopt;
    auto hello = ch->Receive(10s);
    if (!hello.ok()) return std::nullopt;
    if (first != nullptr) *first = *hello;
    return Attacker{std::move(ch).value()};
  }

  // The next grant or refusal, as text ("grant", "refused: ...", "closed: ...").
  std::string Next(std::chrono::milliseconds timeout = 10s) {
    auto answer = channel.Receive(timeout);
    if (!answer.ok()) return "closed: " + answer.status().message();
    if (std::holds_alternative<protocol::Grant>(*answer)) return "grant";
    if (const auto* r = std::get_if<protocol::Refuse>(&*answer)) return "refused: " + r->detail;
    return "other";
  }
};

protocol::Announce AnnounceOf(const std::string& id, uint64_t bytes, uint64_t chunk = 1 << 20) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = bytes;
  a.chunk_size = chunk;
  a.rule = Rule::kXxh3_128;
  a.digest = std::vector<uint8_t>(16, 0x5a);
  return a;
}

bool IsHello(const protocol::Message& m) { return std::holds_alternative<protocol::Hello>(m); }

size_t ThreadsOf(pid_t pid) {
  size_t n = 0;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tasks)) ++n;
  return n;
}

TEST(Liveness, CommittedAndGoneWithoutWritingIsEndedAndItsIdFreed) {
  TempDir dir;
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("server"), "--grant-unused-timeout", "500ms"});
  ASSERT_TRUE(serve);
  const size_t idle_threads = ThreadsOf(serve->process().pid());
  {
    auto attacker = Attacker::Connect(serve->address(), nullptr);
    ASSERT_TRUE(attacker);
    ASSERT_TRUE(attacker->channel.Send(AnnounceOf("orphan", 1 << 20)).ok());
    ASSERT_EQ(attacker->Next(), "grant");
    ASSERT_TRUE(
        attacker->channel.Send(protocol::Commit{"orphan", std::vector<uint8_t>(16, 0x5a), {}})
            .ok());
  }  // gone, having written nothing
  auto ended = serve->ReadLineStartingWith("writ: delivery orphan aborted", 10s);
  ASSERT_TRUE(ended.ok()) << "the orphaned delivery was never ended: " << ended.status().ToString();
  EXPECT_NE(ended->find("committed and closed its connection"), std::string::npos) << *ended;
  // Its connection's thread ends with it (nothing to wait on but the thread list).
  size_t threads = ThreadsOf(serve->process().pid());
  for (int i = 0; i < 500 && threads > idle_threads; ++i) {
    std::this_thread::sleep_for(10ms);
    threads = ThreadsOf(serve->process().pid());
  }
  EXPECT_EQ(threads, idle_threads) << "the connection's thread outlived its delivery";
  // Its id is free again: the real sender of "orphan" delivers it.
  WritePatternFile(dir.File("orphan"), 3, 1 << 20);
  CommandRun sent =
      RunWrit({"send", dir.File("orphan"), "--to", serve->address(), "--id", "orphan"});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
}

TEST(Liveness, CommittedAndGoneIsStillRetainedWhenItsChunksLand) {
  TempDir dir;
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("server"), "--grant-unused-timeout", "5s"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("left"), 4, 3 << 20);
  CommandRun sent = RunWrit({"send", dir.File("left"), "--to", serve->address(), "--until",
                             "transport", "--chunk-size", "1MiB"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  // The receiver finishes it without the sender; nothing to wait on but its answer.
  std::string state;
  for (int i = 0; i < 100 && state != "retained"; ++i) {
    CommandRun q = RunWrit({"query", "left", "--to", serve->address(), "--json"});
    state = q.json.is_object() ? q.json.value("state", "") : "";
  }
  EXPECT_EQ(state, "retained");
  if (state != "retained") {
    auto why = serve->ReadLineStartingWith("writ: delivery left", 1s);
    ADD_FAILURE() << (why.ok() ? *why : why.status().ToString());
  }
}

TEST(Liveness, GrantedWindowNeverWrittenIsRevokedForTheNextSender) {
  TempDir dir;
  auto serve = Serve::Start(
      "tcp", {"--identity", dir.File("server"), "--window-pool", "1MiB", "--window-size", "1MiB",
              "--grant-unused-timeout", "1s", "--window-wait-timeout", "30s"});
  ASSERT_TRUE(serve);
  auto attacker = Attacker::Connect(serve->address(), nullptr, "127.0.0.2");
  REQUIRE_OR_FAIL(attacker, "cannot connect from 127.0.0.2 here");
  ASSERT_TRUE(attacker->channel.Send(AnnounceOf("hog", 4 << 20)).ok());
  ASSERT_EQ(attacker->Next(), "grant");  // the only window, held and never written
  WritePatternFile(dir.File("honest"), 5, 1 << 20);
  CommandRun sent =
      RunWrit({"send", dir.File("honest"), "--to", serve->address(), "--chunk-size", "1MiB"});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  const std::string told = attacker->Next();
  EXPECT_NE(told.find("saw no chunk land for 1000 ms"), std::string::npos) << told;
}

TEST(Liveness, SenderWaitingForAWindowIsToldNoWindowAvailable) {
  TempDir dir;
  auto serve = Serve::Start(
      "tcp", {"--identity", dir.File("server"), "--window-pool", "1MiB", "--window-size", "1MiB",
              "--grant-unused-timeout", "60s", "--window-wait-timeout", "1s"});
  ASSERT_TRUE(serve);
  auto holder = Attacker::Connect(serve->address(), nullptr, "127.0.0.2");
  REQUIRE_OR_FAIL(holder, "cannot connect from 127.0.0.2 here");
  ASSERT_TRUE(holder->channel.Send(AnnounceOf("holder", 4 << 20)).ok());
  ASSERT_EQ(holder->Next(), "grant");
  WritePatternFile(dir.File("waits"), 6, 1 << 20);
  CommandRun sent =
      RunWrit({"send", dir.File("waits"), "--to", serve->address(), "--chunk-size", "1MiB"});
  EXPECT_EQ(sent.exit_code, 3) << sent.err;
  EXPECT_NE(sent.err.find("no window available"), std::string::npos) << sent.err;
  EXPECT_NE(sent.err.find("all 1 windows of this receiver are granted"), std::string::npos)
      << sent.err;
}

// A connection carries several deliveries at once, up to its hello's max_in_flight; past it,
// or with an id already in flight on it, an announce is refused and the others go on.
TEST(Admission, AConnectionCarriesUpToItsHellosMaxInFlight) {
  TempDir dir;
  auto serve =
      Serve::Start("tcp", {"--identity", dir.File("server"), "--max-deliveries-per-sender", "3"});
  ASSERT_TRUE(serve);
  protocol::Message first;
  auto sender = Attacker::Connect(serve->address(), &first);
  ASSERT_TRUE(sender);
  ASSERT_TRUE(IsHello(first));
  EXPECT_EQ(std::get<protocol::Hello>(first).max_in_flight, 3u);
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(sender->channel.Send(AnnounceOf(id, 1 << 20)).ok());
    ASSERT_EQ(sender->Next(), "grant") << id;
  }
  ASSERT_TRUE(sender->channel.Send(AnnounceOf("d", 1 << 20)).ok());
  EXPECT_EQ(sender->Next(),
            "refused: this connection already has 3 deliveries in progress, its limit "
            "(max_in_flight 3 in the hello)");
  ASSERT_TRUE(sender->channel.Send(protocol::Abort{"a", "done with it"}).ok());
  ASSERT_TRUE(sender->channel.Send(AnnounceOf("b", 1 << 20)).ok());
  const std::string again = sender->Next();
  EXPECT_NE(again.find("already in progress on this connection"), std::string::npos) << again;
  ASSERT_TRUE(sender->channel.Send(AnnounceOf("d", 1 << 20)).ok());
  EXPECT_EQ(sender->Next(), "grant") << "a's place is free once it was aborted";
}

TEST(Admission, IdleConnectionsCannotLockOutASender) {
  TempDir dir;
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("server"), "--max-connections", "8",
              "--max-connections-per-address", "4", "--handshake-timeout", "60s"});
  ASSERT_TRUE(serve);
  std::vector<Attacker> idle;
  for (const char* source : {"127.0.0.2", "127.0.0.3"}) {
    for (int i = 0; i < 6; ++i) {
      protocol::Message first;
      auto a = Attacker::Connect(serve->address(), &first, source);
      REQUIRE_OR_FAIL(a || i != 0, "cannot connect from " << source << " here");
      ASSERT_TRUE(a);
      if (i < 4) {
        EXPECT_TRUE(IsHello(first)) << source << " connection " << i;
        idle.push_back(std::move(*a));
      } else {
        const auto* r = std::get_if<protocol::Refuse>(&first);
        ASSERT_NE(r, nullptr) << source << " connection " << i << " was admitted";
        EXPECT_NE(r->detail.find(std::string("too many connections from ") + source),
                  std::string::npos)
            << r->detail;
      }
    }
  }
  // All 8 connections are held, idle, by the two attacking addresses: a sender on
  // 127.0.0.1 is admitted at once in the place of the one idle longest.
  WritePatternFile(dir.File("legit"), 7, 1 << 20);
  CommandRun sent = RunWrit({"send", dir.File("legit"), "--to", serve->address()});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  const std::string evicted = idle.front().Next();
  EXPECT_NE(evicted.find("peer closed the connection"), std::string::npos) << evicted;
}

// An announce signed by `who` for the receiver that said hello as `receiver_id`.
protocol::Announce SignedBy(const receipt::Identity& who, const std::string& receiver_id,
                            const std::string& id) {
  protocol::Announce a = AnnounceOf(id, 1 << 20);
  a.sender_key.assign(who.public_key().begin(), who.public_key().end());
  a.nonce = std::vector<uint8_t>(16);
  for (size_t i = 0; i < a.nonce.size(); ++i) {
    a.nonce[i] = static_cast<uint8_t>(id[i % id.size()] + i);
  }
  a.time_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  auto sig = who.Sign(protocol::AnnounceSigningBytes(a, receiver_id));
  a.signature.assign(sig->begin(), sig->end());
  return a;
}

TEST(Admission, OneSenderKeyCannotHoldEveryConnection) {
  TempDir dir;
  auto mallory = receipt::Identity::LoadOrCreate(dir.File("mallory"));
  ASSERT_TRUE(mallory.ok()) << mallory.status().ToString();
  auto serve =
      Serve::Start("tcp", {"--identity", dir.File("server"), "--max-connections-per-sender", "2"});
  ASSERT_TRUE(serve);
  // One key from three addresses: the per-address limit does not stop it, the per-key one does.
  std::vector<Attacker> held;
  std::vector<std::string> answers;
  int n = 0;
  for (const char* source : {"127.0.0.2", "127.0.0.3", "127.0.0.4"}) {
    protocol::Message hello;
    auto a = Attacker::Connect(serve->address(), &hello, source);
    REQUIRE_OR_FAIL(a, "cannot connect from " << source << " here");
    ASSERT_TRUE(IsHello(hello));
    const std::string receiver_id = std::get<protocol::Hello>(hello).receiver_id;
    ASSERT_TRUE(a->channel.Send(SignedBy(*mallory, receiver_id, "m-" + std::to_string(n++))).ok());
    answers.push_back(a->Next());
    held.push_back(std::move(*a));
  }
  EXPECT_EQ(answers[0], "grant");
  EXPECT_EQ(answers[1], "grant");
  EXPECT_NE(answers[2].find("already has 2 connections open"), std::string::npos) << answers[2];
  // Another sender is not counted against that key.
  WritePatternFile(dir.File("other"), 9, 1 << 20);
  CommandRun sent = RunWrit(
      {"send", dir.File("other"), "--to", serve->address(), "--identity", dir.File("alice")});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
}

TEST(Admission, AFrameSentAByteAtATimeIsCutOffAtTheHandshakeTimeout) {
  TempDir dir;
  auto serve = Serve::StartWithStderr(
      "tcp", {"--identity", dir.File("server"), "--handshake-timeout", "500ms"});
  ASSERT_TRUE(serve);
  auto slow = Attacker::Connect(serve->address(), nullptr);
  ASSERT_TRUE(slow);
  const std::vector<uint8_t> frame = protocol::Encode(AnnounceOf("slow", 1 << 20));
  ASSERT_GT(frame.size(), 50u);
  // One byte per 100 ms: the whole frame would take seconds; the serve must not wait for it.
  std::string answer;
  for (size_t i = 0; i < frame.size(); ++i) {
    if (::send(slow->channel.fd(), &frame[i], 1, MSG_NOSIGNAL) != 1) break;
    answer = slow->Next(100ms);
    if (answer.find("timed out") == std::string::npos) break;
  }
  EXPECT_EQ(answer.find("timed out"), std::string::npos) << "the serve still waits: " << answer;
  auto closed = serve->ReadLineStartingWith("writ: connection from 127.0.0.1:", 10s);
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_NE(closed->find("no announce or query within the handshake timeout of 500 ms"),
            std::string::npos)
      << *closed;
}

TEST(Admission, AnAnnounceReservesCapacityOnlyAsWindowsAreGranted) {
  TempDir dir;
  auto serve = Serve::Start("tcp", {"--identity", dir.File("server"), "--volatile-capacity",
                                    "128MiB", "--window-size", "1MiB", "--window-pool", "16MiB"});
  ASSERT_TRUE(serve);
  auto hog = Attacker::Connect(serve->address(), nullptr, "127.0.0.2");
  REQUIRE_OR_FAIL(hog, "cannot connect from 127.0.0.2 here");
  // All of the store's capacity announced, a few windows granted, nothing written.
  ASSERT_TRUE(hog->channel.Send(AnnounceOf("hog", 128ull << 20)).ok());
  ASSERT_EQ(hog->Next(), "grant");
  WritePatternFile(dir.File("fits"), 8, 16 << 20);
  CommandRun sent =
      RunWrit({"send", dir.File("fits"), "--to", serve->address(), "--chunk-size", "1MiB"});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  // A delivery that could never fit is still refused at its announce.
  auto big = Attacker::Connect(serve->address(), nullptr);
  ASSERT_TRUE(big);
  ASSERT_TRUE(big->channel.Send(AnnounceOf("too-big", 129ull << 20)).ok());
  const std::string answer = big->Next();
  EXPECT_NE(answer.find("exceeds the volatile store's capacity of 134217728 bytes"),
            std::string::npos)
      << answer;
}

TEST(VolatileLimits, MoreDeliveriesThanTheDescriptorLimitAreAllRetained) {
  TempDir dir;
  // The serve may open at most 256 descriptors (soft and hard limit: it cannot raise it).
  auto serve =
      Serve::StartAs({"prlimit", "--nofile=256:256"}, "tcp", {"--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  SessionOptions session;
  session.to = serve->address();
  auto sender = Sender::Connect(session);
  ASSERT_TRUE(sender.ok()) << sender.status().ToString();
  std::vector<uint8_t> bytes(4096, 0x42);
  constexpr int kDeliveries = 400;
  for (int i = 0; i < kDeliveries; ++i) {
    bytes[0] = static_cast<uint8_t>(i);
    bytes[1] = static_cast<uint8_t>(i >> 8);
    DeliveryOptions d;
    d.id = "v-" + std::to_string(i);
    DeliveryOutcome out = (*sender)->SendBytes(bytes, d);
    ASSERT_TRUE(out.status.ok()) << d.id << ": " << out.status.ToString();
  }
  CommandRun first = RunWrit({"query", "v-0", "--to", serve->address(), "--json"});
  EXPECT_EQ(first.json.value("state", ""), "retained") << first.out << first.err;
}

}  // namespace
}  // namespace writ::testing
