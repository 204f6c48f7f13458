// Standing windows (docs/protocol.md, "Standing windows") against a real `writ serve`: once a
// session's first delivery is admitted the receiver grants a ring; small deliveries are then
// written into its slots and announced and committed in one `deliver`, with no announce/grant
// round trip; large ones, and a session with the ring turned off, keep the announce path; a
// forged or wrong `deliver` is refused by name and the connection goes on.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "byte_sizes.h"
#include "common/hex.h"
#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "provider_matrix.h"
#include "receipt/identity.h"
#include "requirement.h"
#include "sender/request_signing.h"
#include "vocabulary/digest.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> DigestBytes(std::span<const uint8_t> bytes) {
  auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return (*digester)->Finish();
}

std::vector<uint8_t> Pattern(size_t n, size_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t b = 0; b < n; ++b) out[b] = static_cast<uint8_t>(seed * 31 + b * 7 + 1);
  return out;
}

class StandingWindow : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " cannot serve on this machine");
    serve_ = Serve::Start(GetParam(), {"--max-deliveries-per-sender", "64"});
    ASSERT_TRUE(serve_);
  }

  std::unique_ptr<Sender> Connect(bool ring = true) {
    SessionOptions options;
    options.to = serve_->address();
    options.identity_dir = dir_.File("identity");
    options.max_in_flight = 64;
    options.ring = ring;
    auto sender = Sender::Connect(options);
    EXPECT_TRUE(sender.ok()) << sender.status().ToString();
    return sender.ok() ? std::move(sender).value() : nullptr;
  }

  static DeliveryOptions Options(const std::string& id) {
    DeliveryOptions o;
    o.id = id;
    o.stall_timeout = 20s;
    return o;
  }

  // The session's first delivery goes the announce way; its admission grants the ring.
  static void Warm(Sender& sender) {
    const DeliveryOutcome warm = sender.SendBytes(Pattern(4 * kKiB, 999), Options("warm"));
    ASSERT_TRUE(warm.status.ok()) << warm.status.ToString();
    EXPECT_FALSE(warm.ring) << "no ring before the first admitted delivery";
  }

  TempDir dir_;
  std::unique_ptr<Serve> serve_;
};

TEST_P(StandingWindow, ManySmallDeliveriesInFlightThroughTheRingEachGetTheirReceipts) {
  auto sender = Connect();
  ASSERT_TRUE(sender);
  Warm(*sender);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<DeliveryHandle> handles;
  for (size_t i = 0; i < 64; ++i) {
    bytes.push_back(Pattern(4 * kKiB + i, i));  // every one its own bytes and size
    handles.push_back(sender->SubmitBytes(bytes.back(), Options("ring-" + std::to_string(i))));
  }
  size_t through_ring = 0;
  for (size_t i = 0; i < handles.size(); ++i) {
    const DeliveryOutcome& o = handles[i].Wait();
    const std::string id = "ring-" + std::to_string(i);
    ASSERT_TRUE(o.status.ok()) << id << ": " << o.status.ToString();
    through_ring += o.ring ? 1 : 0;
    EXPECT_EQ(o.delivery.digest, writ::ToHex(DigestBytes(bytes[i]))) << id;
    ASSERT_EQ(o.receipts.size(), 4u) << id;  // transport, received, validated, retained
    for (const auto& r : o.receipts) {
      EXPECT_EQ(r.delivery.id, id);
      EXPECT_EQ(r.delivery.bytes, bytes[i].size());
      EXPECT_EQ(r.delivery.digest, o.delivery.digest) << id << " " << ReceiptRungName(r.rung);
    }
  }
  // 64 slots for 64 deliveries: none had to fall back to the announce path.
  EXPECT_EQ(through_ring, handles.size());
  EXPECT_TRUE(sender->usable()) << sender->health().ToString();
}

TEST_P(StandingWindow, ASmallDeliveryAfterTheRingMakesNoAnnounceGrantRoundTrip) {
  auto sender = Connect();
  ASSERT_TRUE(sender);
  Warm(*sender);
  const std::vector<uint8_t> bytes = Pattern(4 * kKiB, 1);
  const DeliveryOutcome o = sender->SendBytes(bytes, Options("small"));
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_TRUE(o.ring) << "written into a ring slot, announced and committed in one deliver";
  EXPECT_NE(o.source_note.find("ring slot"), std::string::npos) << o.source_note;
  EXPECT_EQ(o.delivery.digest, writ::ToHex(DigestBytes(bytes)));
}

TEST_P(StandingWindow, LargeDeliveriesAndASessionWithoutTheRingTakeTheAnnouncePath) {
  auto sender = Connect();
  ASSERT_TRUE(sender);
  Warm(*sender);
  const DeliveryOutcome large = sender->SendBytes(Pattern(256 * kKiB, 2), Options("large"));
  ASSERT_TRUE(large.status.ok()) << large.status.ToString();
  EXPECT_FALSE(large.ring) << "larger than a 64 KiB slot";

  auto plain = Connect(/*ring=*/false);
  ASSERT_TRUE(plain);
  Warm(*plain);
  const DeliveryOutcome small = plain->SendBytes(Pattern(4 * kKiB, 3), Options("plain-small"));
  ASSERT_TRUE(small.status.ok()) << small.status.ToString();
  EXPECT_FALSE(small.ring) << "SessionOptions::ring = false";
}

// A control connection driven by hand: forged delivers, without the sender library.
struct RawSession {
  protocol::ControlChannel channel;
  protocol::Hello hello;
  std::optional<protocol::Ring> ring;

  static std::optional<RawSession> Connect(const std::string& address) {
    auto hp = protocol::ParseHostPort(address);
    auto ch = protocol::ControlChannel::Connect(hp->first, hp->second, 10s);
    if (!ch.ok()) return std::nullopt;
    auto first = ch->Receive(10s);
    if (!first.ok() || !std::holds_alternative<protocol::Hello>(*first)) return std::nullopt;
    return RawSession{std::move(ch).value(), std::get<protocol::Hello>(*first), std::nullopt};
  }

  // An empty delivery, its digest announced, and its commit: admitted, then retained.
  bool SendEmpty(const std::string& id) {
    protocol::Announce a;
    a.delivery_id = id;
    a.bytes = 0;
    a.chunk_size = 1;
    a.rule = Rule::kXxh3_128;
    a.digest = DigestBytes({});
    return channel.Send(a).ok() && channel.Send(protocol::Commit{id, a.digest, {}}).ok();
  }

  // Skips receipts and notes the ring until a refusal or a retained receipt names `id`:
  // "refused: DETAIL", "retained", or why nothing came.
  std::string AnswerFor(const std::string& id) {
    for (;;) {
      auto m = channel.Receive(10s);
      if (!m.ok()) return "no answer: " + m.status().message();
      if (const auto* r = std::get_if<protocol::Ring>(&*m)) ring = *r;
      if (const auto* r = std::get_if<protocol::Refuse>(&*m); r && r->delivery_id == id) {
        return "refused: " + r->detail;
      }
      for (const protocol::Receipt* r : protocol::ReceiptsOf(*m)) {
        if (r->delivery_id == id && r->json.find("\"retained\"") != std::string::npos) {
          return "retained";
        }
      }
    }
  }
};

protocol::Deliver DeliverOf(const std::string& id, uint32_t slot, uint64_t bytes) {
  protocol::Deliver d;
  d.slot = slot;
  d.announce.digest = std::vector<uint8_t>(16, 0x42);
  d.announce.delivery_id = id;
  d.announce.bytes = bytes;
  d.announce.chunk_size = bytes;
  d.announce.rule = Rule::kXxh3_128;
  return d;
}

TEST_P(StandingWindow, ForgedOrWrongDeliversAreRefusedByNameAndTheConnectionGoesOn) {
  auto raw = RawSession::Connect(serve_->address());
  ASSERT_TRUE(raw);
  // Before any admitted delivery there is no ring to write into.
  ASSERT_TRUE(raw->channel.Send(DeliverOf("early", 0, 10)).ok());
  EXPECT_NE(raw->AnswerFor("early").find("no standing window"), std::string::npos);

  ASSERT_TRUE(raw->SendEmpty("warm"));
  EXPECT_EQ(raw->AnswerFor("warm"), "retained");
  ASSERT_TRUE(raw->ring) << "the ring comes with the first admitted delivery";
  const protocol::Ring ring = *raw->ring;
  EXPECT_EQ(ring.slot_count, 64u);
  EXPECT_EQ(ring.slot_size, 64 * kKiB);

  ASSERT_TRUE(raw->channel.Send(DeliverOf("out-of-range", ring.slot_count, 10)).ok());
  EXPECT_NE(raw->AnswerFor("out-of-range").find("out of range"), std::string::npos);
  ASSERT_TRUE(raw->channel.Send(DeliverOf("too-big", 0, ring.slot_size + 1)).ok());
  EXPECT_NE(raw->AnswerFor("too-big").find("do not fit a ring slot"), std::string::npos);

  // Slot 0 taken by a delivery whose write has not landed: a second deliver for it is refused.
  ASSERT_TRUE(raw->channel.Send(DeliverOf("holds-0", 0, 10)).ok());
  ASSERT_TRUE(raw->channel.Send(DeliverOf("also-0", 0, 10)).ok());
  EXPECT_NE(raw->AnswerFor("also-0").find("slot 0 is in use by delivery holds-0"),
            std::string::npos);

  // Signed, then given another digest: its one signature covers the digest, so it no
  // longer verifies.
  auto alice = receipt::Identity::LoadOrCreate(dir_.File("alice"));
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  protocol::Deliver forged = DeliverOf("forged", 1, 10);
  ASSERT_TRUE(sender::SignAnnounce(*alice, raw->hello.receiver_id, forged.announce).ok());
  forged.announce.digest[0] ^= 1;
  ASSERT_TRUE(raw->channel.Send(forged).ok());
  EXPECT_NE(raw->AnswerFor("forged").find("announce's signature does not verify"),
            std::string::npos);
  // The connection goes on.
  ASSERT_TRUE(raw->SendEmpty("after"));
  EXPECT_EQ(raw->AnswerFor("after"), "retained");
  // The delivery holding slot 0 is given up (else the serve's stop would wait for it).
  EXPECT_TRUE(raw->channel.Send(protocol::Abort{"holds-0", "the test is over"}).ok());
}

INSTANTIATE_TEST_SUITE_P(Providers, StandingWindow,
                         ::testing::ValuesIn(testing::LoopbackProviderNames()),
                         testing::ProviderName);

}  // namespace
}  // namespace writ::testing
