// Signed requests are bound to the receiver's key, not to its address or --receiver-id: an
// announce or query signed for receiver A and replayed at receiver B (another key, another
// data directory, the same name) is refused. Before, the signing strings named only
// "writ-serve@ADDRESS" (or --receiver-id), the same for every default serve on a port.
#include <gtest/gtest.h>

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

class ReceiverBinding : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    alice_ = std::move(receipt::Identity::LoadOrCreate(dir_.File("alice"))).value();
    std::ofstream(dir_.File("allow")) << receipt::PublicKeyHex(alice_->public_key()) << "\n";
    // Two receivers with one name: only their keys tell them apart.
    for (const char* name : {"a", "b"}) {
      serves_.push_back(
          Serve::Start("tcp", {"--identity", dir_.File(std::string("id-") + name), "--data",
                               dir_.File(std::string("data-") + name), "--allow",
                               dir_.File("allow"), "--receiver-id", "writ-serve@shared"}));
      ASSERT_TRUE(serves_.back());
    }
  }

  TempDir dir_;
  std::optional<receipt::Identity> alice_;
  std::vector<std::unique_ptr<Serve>> serves_;
};

TEST_F(ReceiverBinding, TwoReceiversWithOneNameSayDifferentIds) {
  auto a = HelloFrom(serves_[0]->address());
  auto b = HelloFrom(serves_[1]->address());
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->hello.receiver_id, b->hello.receiver_id);
}

TEST_F(ReceiverBinding, AnAnnounceSignedForOneReceiverIsRefusedByAnother) {
  auto a = HelloFrom(serves_[0]->address());
  ASSERT_TRUE(a);
  protocol::Announce captured = AnnounceOf("captured-1");
  ASSERT_TRUE(sender::SignAnnounce(*alice_, a->hello.receiver_id, captured).ok());
  auto b = HelloFrom(serves_[1]->address());
  ASSERT_TRUE(b);
  const std::string at_b = FirstAnswer(*b, captured);
  EXPECT_NE(at_b.find("refused"), std::string::npos) << at_b;
  EXPECT_NE(at_b.find("does not verify"), std::string::npos) << at_b;
  // The same announce is admitted where it was signed.
  EXPECT_EQ(FirstAnswer(*a, captured), "grant");
}

TEST_F(ReceiverBinding, AQuerySignedForOneReceiverIsRefusedByAnother) {
  auto a = HelloFrom(serves_[0]->address());
  ASSERT_TRUE(a);
  protocol::Query captured;
  captured.delivery_id = "anything";
  ASSERT_TRUE(sender::SignQuery(*alice_, a->hello.receiver_id, captured).ok());
  auto b = HelloFrom(serves_[1]->address());
  ASSERT_TRUE(b);
  const std::string at_b = FirstAnswer(*b, captured);
  EXPECT_NE(at_b.find("does not verify"), std::string::npos) << at_b;
  EXPECT_EQ(FirstAnswer(*a, captured), "answer");
}

}  // namespace
}  // namespace writ::testing
