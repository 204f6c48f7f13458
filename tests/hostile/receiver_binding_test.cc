// Signed requests are bound to the receiver's key, not to its address: an announce or query
// signed for receiver A and replayed at receiver B (another key, another data directory, the
// same address after A stopped) is refused. Before, the signing strings named only
// "writ-serve@ADDRESS", the same for every default serve on a port and across restarts.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "requirement.h"
#include "sender/request_signing.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

struct Peer {
  protocol::ControlChannel channel;
  protocol::Hello hello;
};

std::optional<Peer> HelloFrom(const std::string& address) {
  auto hp = protocol::ParseHostPort(address);
  if (!hp.ok()) return std::nullopt;
  auto ch = protocol::ControlChannel::Connect(hp->first, hp->second, 10s);
  if (!ch.ok()) return std::nullopt;
  auto first = ch->Receive(10s);
  if (!first.ok() || !std::holds_alternative<protocol::Hello>(*first)) return std::nullopt;
  return Peer{std::move(ch).value(), std::get<protocol::Hello>(*first)};
}

// The receiver's first answer: "grant", "answer" (a query answer) or "refused: DETAIL".
std::string FirstAnswer(Peer& peer, const protocol::Message& request) {
  if (!peer.channel.Send(request).ok()) return "send failed";
  auto answer = peer.channel.Receive(10s);
  if (!answer.ok()) return "no answer: " + answer.status().message();
  if (std::holds_alternative<protocol::Grant>(*answer)) return "grant";
  if (std::holds_alternative<protocol::QueryAnswer>(*answer)) return "answer";
  if (const auto* r = std::get_if<protocol::Refuse>(&*answer)) return "refused: " + r->detail;
  return "other";
}

protocol::Announce AnnounceOf(const std::string& id) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = 1 << 20;
  a.chunk_size = 1 << 20;
  a.rule = Rule::kSha256;
  a.digest = std::vector<uint8_t>(32, 0x22);
  return a;
}

// Receiver A on an address, then receiver B (another key, another data directory) on the
// same address once A is gone: before, both said "writ-serve@127.0.0.1:PORT".
class ReceiverBinding : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    alice_ = std::move(receipt::Identity::LoadOrCreate(dir_.File("alice"))).value();
    std::ofstream(dir_.File("allow")) << receipt::PublicKeyHex(alice_->public_key()) << "\n";
    a_ = Serve::Start("tcp", Args("a"));
    ASSERT_TRUE(a_);
    address_ = a_->address();
  }

  std::vector<std::string> Args(const std::string& name) {
    return {"--identity", dir_.File("id-" + name), "--data", dir_.File("data-" + name),
            "--allow",    dir_.File("allow")};
  }

  // Stops A and starts B on A's address.
  void ReplaceAWithB() {
    ASSERT_EQ(a_->Stop(), 0);
    std::vector<std::string> args = {"serve", "--listen", address_, "--provider", "tcp"};
    for (const std::string& arg : Args("b")) args.push_back(arg);
    b_ = StartWrit(args, dir_.File("b.err"));
    ASSERT_TRUE(b_);
    auto line = b_->ReadLineStartingWith("writ: listening on ", 60s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
  }

  void TearDown() override {
    if (b_) {
      b_->Kill(SIGTERM);
      (void)b_->Wait(60s);
    }
  }

  TempDir dir_;
  std::optional<receipt::Identity> alice_;
  std::unique_ptr<Serve> a_;
  std::unique_ptr<ChildProcess> b_;
  std::string address_;
};

TEST_F(ReceiverBinding, AnotherKeyOnTheSameAddressSaysAnotherId) {
  auto a = HelloFrom(address_);
  ASSERT_TRUE(a);
  const std::string id_a = a->hello.receiver_id;
  ASSERT_NO_FATAL_FAILURE(ReplaceAWithB());
  auto b = HelloFrom(address_);
  ASSERT_TRUE(b);
  EXPECT_NE(b->hello.receiver_id, id_a);
}

TEST_F(ReceiverBinding, AnAnnounceSignedForOneReceiverIsRefusedByAnother) {
  auto a = HelloFrom(address_);
  ASSERT_TRUE(a);
  protocol::Announce captured = AnnounceOf("captured-1");
  ASSERT_TRUE(sender::SignAnnounce(*alice_, a->hello.receiver_id, captured).ok());
  ASSERT_NO_FATAL_FAILURE(ReplaceAWithB());
  auto b = HelloFrom(address_);
  ASSERT_TRUE(b);
  const std::string at_b = FirstAnswer(*b, captured);
  EXPECT_NE(at_b.find("refused"), std::string::npos) << at_b;
  EXPECT_NE(at_b.find("does not verify"), std::string::npos) << at_b;
  // Signed for B, the same request is admitted: only the binding was wrong.
  protocol::Announce own = AnnounceOf("own-1");
  ASSERT_TRUE(sender::SignAnnounce(*alice_, b->hello.receiver_id, own).ok());
  auto again = HelloFrom(address_);
  ASSERT_TRUE(again);
  EXPECT_EQ(FirstAnswer(*again, own), "grant");
}

TEST_F(ReceiverBinding, AQuerySignedForOneReceiverIsRefusedByAnother) {
  auto a = HelloFrom(address_);
  ASSERT_TRUE(a);
  protocol::Query captured;
  captured.delivery_id = "anything";
  ASSERT_TRUE(sender::SignQuery(*alice_, a->hello.receiver_id, captured).ok());
  ASSERT_NO_FATAL_FAILURE(ReplaceAWithB());
  auto b = HelloFrom(address_);
  ASSERT_TRUE(b);
  const std::string at_b = FirstAnswer(*b, captured);
  EXPECT_NE(at_b.find("does not verify"), std::string::npos) << at_b;
}

}  // namespace
}  // namespace writ::testing
