// Receipts anyone can verify, senders the receiver knows: against the real binaries.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "requirement.h"
#include "vocabulary/digest.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string KeyOf(const std::string& identity_dir) {
  CommandRun shown = RunWrit({"key", "show", "--identity", identity_dir});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  return shown.out.substr(0, 64);
}

struct AuthFixture {
  TempDir dir;
  std::string alice = dir.File("alice");
  std::string mallory = dir.File("mallory");
  std::string server_identity = dir.File("server");
  std::unique_ptr<Serve> serve;
  std::string file = dir.File("data");

  AuthFixture() {
    std::ofstream(dir.File("allow")) << "# senders allowed to write here\n" << KeyOf(alice) << "\n";
    (void)KeyOf(mallory);
    WritePatternFile(file, 9, 3 << 20);
    serve = Serve::Start("tcp", {"--allow", dir.File("allow"), "--identity", server_identity});
  }
};

TEST(SenderAuth, OnlyAllowedSignedSendersGetAWindow) {
  AuthFixture f;
  ASSERT_TRUE(f.serve);
  CommandRun anonymous = RunWrit({"send", f.file, "--to", f.serve->address()});
  EXPECT_EQ(anonymous.exit_code, 3) << anonymous.err;
  EXPECT_NE(anonymous.err.find("(auth)"), std::string::npos) << anonymous.err;

  CommandRun stranger =
      RunWrit({"send", f.file, "--to", f.serve->address(), "--identity", f.mallory});
  EXPECT_EQ(stranger.exit_code, 3) << stranger.err;
  EXPECT_NE(stranger.err.find("not on the allow list"), std::string::npos) << stranger.err;

  CommandRun allowed =
      RunWrit({"send", f.file, "--to", f.serve->address(), "--identity", f.alice, "--json"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  ASSERT_EQ(allowed.json["receipts"].size(), 4u);
  EXPECT_EQ(allowed.json["receipts"][0]["signature"]["public_key"], KeyOf(f.alice))
      << "the sender signs its own transport receipt";
  const std::string server_key = KeyOf(f.server_identity);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(allowed.json["receipts"][i]["signature"]["public_key"], server_key);
  }
}

// A raw control connection speaking the protocol, to replay and forge announces.
struct RawSender {
  protocol::ControlChannel channel;
  protocol::Hello hello;

  static std::optional<RawSender> Connect(const std::string& address) {
    auto hp = protocol::ParseHostPort(address);
    auto ch = protocol::ControlChannel::Connect(hp->first, hp->second, 10s);
    if (!ch.ok()) return std::nullopt;
    auto first = ch->Receive(10s);
    if (!first.ok() || !std::holds_alternative<protocol::Hello>(*first)) return std::nullopt;
    return RawSender{std::move(ch).value(), std::get<protocol::Hello>(*first)};
  }

  // The first grant or refusal the receiver answers with.
  std::string AnswerTo(const protocol::Announce& announce) {
    if (!channel.Send(announce).ok()) return "send failed";
    auto answer = channel.Receive(10s);
    if (!answer.ok()) return "no answer: " + answer.status().message();
    if (std::holds_alternative<protocol::Grant>(*answer)) return "grant";
    if (const auto* r = std::get_if<protocol::Refuse>(&*answer)) return "refused: " + r->detail;
    return "other";
  }
};

protocol::Announce SignedAnnounce(const receipt::Identity& who, const std::string& receiver_id,
                                  const std::string& id, int64_t age_ms) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = 1 << 20;
  a.chunk_size = 1 << 20;
  a.rule = Rule::kXxh3_128;
  a.digest = std::vector<uint8_t>(16, 0x11);
  a.sender_key.assign(who.public_key().begin(), who.public_key().end());
  a.nonce = std::vector<uint8_t>(16);
  for (size_t i = 0; i < a.nonce.size(); ++i)
    a.nonce[i] = static_cast<uint8_t>(id[i % id.size()] + i);
  a.time_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count() -
                                    age_ms);
  auto sig = who.Sign(protocol::AnnounceSigningBytes(a, receiver_id));
  a.signature.assign(sig->begin(), sig->end());
  return a;
}

TEST(SenderAuth, ReplayedStaleAndForgedAnnouncesGetNoWindow) {
  AuthFixture f;
  ASSERT_TRUE(f.serve);
  auto alice = receipt::Identity::LoadOrCreate(f.alice);
  ASSERT_TRUE(alice.ok());
  auto first = RawSender::Connect(f.serve->address());
  ASSERT_TRUE(first);
  const protocol::Announce fresh = SignedAnnounce(*alice, first->hello.receiver_id, "replay-me", 0);
  EXPECT_EQ(first->AnswerTo(fresh), "grant");

  auto second = RawSender::Connect(f.serve->address());
  ASSERT_TRUE(second);
  EXPECT_NE(second->AnswerTo(fresh).find("replayed announce"), std::string::npos);

  auto third = RawSender::Connect(f.serve->address());
  ASSERT_TRUE(third);
  const auto stale = SignedAnnounce(*alice, third->hello.receiver_id, "stale", 10 * 60 * 1000);
  EXPECT_NE(third->AnswerTo(stale).find("stale announce"), std::string::npos);

  auto fourth = RawSender::Connect(f.serve->address());
  ASSERT_TRUE(fourth);
  protocol::Announce forged = SignedAnnounce(*alice, fourth->hello.receiver_id, "forged", 0);
  forged.bytes = 2 << 20;  // changed after signing
  forged.chunk_size = 2 << 20;
  EXPECT_NE(fourth->AnswerTo(forged).find("does not verify"), std::string::npos);

  auto fifth = RawSender::Connect(f.serve->address());
  ASSERT_TRUE(fifth);
  const auto elsewhere = SignedAnnounce(*alice, "writ-serve@some-other-receiver", "elsewhere", 0);
  EXPECT_NE(fifth->AnswerTo(elsewhere).find("does not verify"), std::string::npos)
      << "an announce signed for another receiver is refused";
}

TEST(ReceiptVerification, AnyChangedFieldIsDetected) {
  TempDir dir;
  WritePatternFile(dir.File("data"), 4, 2 << 20);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const std::string server_key = KeyOf(dir.File("server"));
  const json retained = sent.json["receipts"].back();
  ASSERT_EQ(retained["rung"], "retained");
  const std::string path = dir.File("receipt.json");
  std::ofstream(path) << retained.dump();
  EXPECT_EQ(RunWrit({"verify", path}).exit_code, 0);
  EXPECT_EQ(RunWrit({"verify", path, "--key", server_key}).exit_code, 0);
  EXPECT_EQ(RunWrit({"verify", path, "--key", KeyOf(dir.File("other"))}).exit_code, 5)
      << "pinned to another key";

  const std::vector<std::pair<std::string, json>> changes = {
      {"/delivery/digest", json(std::string(32, 'a'))},
      {"/delivery/bytes", json(1)},
      {"/delivery/id", json("someone-else")},
      {"/retention", json("power-loss")},
      {"/survives", json("power-loss")},
      {"/issuer", json("writ-serve@elsewhere")},
      {"/issued_at", json("2020-01-01T00:00:00.000Z")},
      {"/evidence", json("fsync done")},
      {"/context/provider", json("verbs")},
  };
  for (const auto& [pointer, value] : changes) {
    json changed = retained;
    changed[json::json_pointer(pointer)] = value;
    std::ofstream(path) << changed.dump();
    CommandRun verified = RunWrit({"verify", path});
    EXPECT_EQ(verified.exit_code, 5) << pointer << " changed but the receipt still verified";
    EXPECT_NE(verified.err.find("invalid receipt"), std::string::npos) << verified.err;
  }
  json unsigned_receipt = retained;
  unsigned_receipt.erase("signature");
  std::ofstream(path) << unsigned_receipt.dump();
  CommandRun verified = RunWrit({"verify", path});
  EXPECT_EQ(verified.exit_code, 5);
  EXPECT_NE(verified.err.find("not signed"), std::string::npos);
}

TEST(Limits, EachIsEnforcedWithANamedRefusal) {
  TempDir dir;
  WritePatternFile(dir.File("two-mib"), 5, 2 << 20);
  auto serve = Serve::Start(
      "tcp", {"--max-delivery", "1MiB", "--max-message", "4KiB", "--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  CommandRun big = RunWrit({"send", dir.File("two-mib"), "--to", serve->address()});
  EXPECT_EQ(big.exit_code, 3) << big.err;
  EXPECT_NE(big.err.find("(oversize)"), std::string::npos) << big.err;

  // A control message larger than --max-message: refused, naming the size, before parsing.
  auto raw = RawSender::Connect(serve->address());
  ASSERT_TRUE(raw);
  const protocol::Receipt oversize{"x", "{\"pad\":\"" + std::string(8000, 'p') + "\"}"};
  ASSERT_TRUE(raw->channel.Send(oversize).ok());
  auto answer = raw->channel.Receive(10s);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  const auto* refusal = std::get_if<protocol::Refuse>(&*answer);
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->reason, protocol::RefuseReason::kMalformed);
  EXPECT_NE(refusal->detail.find("4084"), std::string::npos) << refusal->detail;
}

TEST(Limits, ConcurrentDeliveriesPerSenderAreCapped) {
  TempDir dir;
  auto serve =
      Serve::Start("tcp", {"--max-deliveries-per-sender", "1", "--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  auto announce = [](const std::string& id) {
    protocol::Announce a;
    a.delivery_id = id;
    a.bytes = 1 << 20;
    a.chunk_size = 1 << 20;
    a.digest = std::vector<uint8_t>(16);
    return a;
  };
  auto first = RawSender::Connect(serve->address());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->AnswerTo(announce("one")), "grant");
  auto second = RawSender::Connect(serve->address());
  ASSERT_TRUE(second);
  const std::string answer = second->AnswerTo(announce("two"));
  EXPECT_NE(answer.find("already has 1 deliveries in progress"), std::string::npos) << answer;
  first.reset();  // the first delivery is abandoned when its connection closes
  auto third = RawSender::Connect(serve->address());
  ASSERT_TRUE(third);
  // The abandoned delivery's slot is freed once the receiver sees the close.
  std::string later;
  for (int i = 0; i < 50 && later != "grant"; ++i) {
    auto again = RawSender::Connect(serve->address());
    later = again ? again->AnswerTo(announce("three-" + std::to_string(i))) : "no connection";
  }
  EXPECT_EQ(later, "grant");
}

}  // namespace
}  // namespace writ::testing

namespace writ::testing {
namespace {

// shm checks no memory keys, so a receiver on shm admits only its own user. Run the
// receiver as `nobody` and send as root: refused by name (root could write anyway).
TEST(ShmPolicy, ASenderOfAnotherUserIsRefused) {
  REQUIRE_OR_FAIL(getuid() == 0, "needs root to run the receiver as another user (setpriv)");
  REQUIRE_OR_FAIL(ProviderAvailable("shm"), "shm cannot serve on this machine");
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  WritePatternFile(dir.File("data"), 6, 1 << 20);
  auto serve = Serve::StartAs({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"},
                              "shm", {"--identity", dir.File("id"), "--scratch", dir.path()});
  ASSERT_TRUE(serve);
  CommandRun run = RunWrit({"send", dir.File("data"), "--to", serve->address()});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_NE(run.err.find("does not check memory keys"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("uid 65534"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace writ::testing
