// Deliveries into memory the receiver's application owns (Receiver::Expose; issue 32): a
// real receiver and sender in one process over the MemoryFabric. Each test asserts where the
// bytes landed (the application's buffer, read back directly), what the sender was told,
// and what the application's callback heard, and when.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "exposed_support.h"
#include "protocol/codec.h"
#include "receipt/identity.h"
#include "vocabulary/digest.h"
#include "writ/audit.h"

namespace writ::inprocess {
namespace {

using namespace std::chrono_literals;
using protocol::RefuseReason;

class ExposedTarget : public ::testing::Test {
 protected:
  void StartRig(ReceiverOptions options) {
    Status started = rig_.Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  void StartRig() { StartRig(rig_.BaseOptions()); }
  std::unique_ptr<RawPeer> Peer() {
    auto peer = RawPeer::Open(rig_);
    EXPECT_TRUE(peer.ok()) << peer.status().ToString();
    return peer.ok() ? std::move(peer).value() : nullptr;
  }
  protocol::Announce AddressedAnnounce(RawPeer& peer, const std::string& id, uint64_t bytes,
                                       uint64_t offset, const std::string& target = "kv") {
    protocol::Announce a = peer.AnnounceOf(id, bytes, std::min<uint64_t>(bytes, kExposedChunk));
    a.target = target;
    a.target_offset = offset;
    return a;
  }

  // Declared before the rig, so destroyed after it: a delivery still in flight when a test
  // ends is ended by the rig's stop, which tells the callback and may clear its range.
  std::vector<uint8_t> buffer_ = std::vector<uint8_t>(1 << 20, 0);
  Heard heard_;
  MemoryRig rig_;
};

TEST_F(ExposedTarget, DeliveriesAtOffsetsLandInTheApplicationsBufferValidatedInPlace) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, Listening(heard_)).ok());
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const auto first = PatternBytes(1, 3 * kExposedChunk + 100);
  const auto second = PatternBytes(2, 4096);
  const DeliveryOutcome one = rig_.Deliver(**link, first, Into("block-1", "kv", 4096));
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  const DeliveryOutcome two = rig_.Deliver(**link, second, Into("block-2", "kv", 512 << 10));
  ASSERT_TRUE(two.status.ok()) << two.status.ToString();

  EXPECT_TRUE(std::equal(first.begin(), first.end(), buffer_.begin() + 4096));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), buffer_.begin() + (512 << 10)));
  EXPECT_TRUE(AllZero(std::span(buffer_).first(4096))) << "nothing lands before the range";
  EXPECT_TRUE(AllZero(std::span(buffer_).subspan(4096 + first.size(), 4096)));
  EXPECT_EQ(rig_.fabric().counts().bytes_placed, first.size() + second.size());

  EXPECT_EQ(RungNames(one),
            (std::vector<std::string>{"transport", "received", "validated", "retained"}));
  const std::string key = rig_.receiver().public_key_hex();
  const std::string range = "kv, bytes [4096, " + std::to_string(4096 + first.size()) + ")";
  for (const Receipt& r : one.receipts) {
    if (r.rung == ReceiptRung::kTransport) continue;
    EXPECT_TRUE(VerifyReceipt(r, key).ok()) << ReceiptRungName(r.rung);
    if (r.rung == ReceiptRung::kRetained) {
      ASSERT_TRUE(r.retention.has_value());
      EXPECT_EQ(r.retention->retention, "volatile");
      EXPECT_EQ(r.retention->acknowledged_point, "in the application's buffer " + range);
      EXPECT_NE(r.retention->promise_after_failure.find("the application owns the buffer"),
                std::string::npos);
    } else {
      EXPECT_NE(r.statement.find("the application's buffer " + range), std::string::npos)
          << r.statement;
    }
  }
  std::vector<uint8_t> held(16);
  EXPECT_EQ(rig_.receiver().Read("block-1", 0, held).code(), ErrorCode::kNotFound)
      << "writ's store holds no copy";

  ASSERT_EQ(heard_.AwaitCount(2), 2u);
  const TargetDelivery told = heard_.at(0);
  EXPECT_EQ(told.target, "kv");
  EXPECT_EQ(told.delivery_id, "block-1");
  EXPECT_EQ(told.offset, 4096u);
  EXPECT_EQ(told.bytes, first.size());
  EXPECT_TRUE(told.ok);
  EXPECT_TRUE(heard_.at(1).ok);
}

TEST_F(ExposedTarget, TheSendersEvidenceOfAnAddressedDeliveryAuditsWithEveryClaimSupported) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const auto bytes = PatternBytes(3, 2 * kExposedChunk);
  const DeliveryOutcome out = rig_.Deliver(**link, bytes, Into("audited", "kv", 0));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  auto bundle = audit::ParseBundle(OutcomeToEvidenceBundle(out));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const audit::AuditReport report = audit::Audit(*bundle);
  for (const audit::ClaimVerdict& c : report.claims) {
    EXPECT_EQ(c.verdict, audit::Verdict::kSupported) << c.id << ": " << c.reason;
  }
  EXPECT_FALSE(report.claims.empty());
}

TEST_F(ExposedTarget, TheCallbackWaitsForValidationNotForTheBytesLanding) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, Listening(heard_)).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const auto bytes = PatternBytes(4, kExposedChunk);
  // No digest announced: validation waits for the commit, after every byte landed.
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "late-commit", bytes.size(), 8192)).ok());
  PeerSaw saw = peer->Watch("late-commit", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  ASSERT_TRUE(peer->WriteWindow(saw.grants[0], kExposedChunk, bytes).ok());
  saw = peer->Watch("late-commit", 300ms);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), buffer_.begin() + 8192)) << "landed";
  EXPECT_EQ(heard_.count(), 0u) << "told before the bytes were validated";
  ASSERT_TRUE(peer->Send(protocol::Commit{"late-commit", DigestOf(bytes), {}}).ok());
  saw = peer->Watch("late-commit", kExposedWatch);
  ASSERT_FALSE(saw.rungs.empty()) << ExposedReason(saw);
  EXPECT_EQ(saw.rungs.back(), "retained");
  ASSERT_EQ(heard_.AwaitCount(1), 1u);
  EXPECT_TRUE(heard_.at(0).ok);
}

TEST_F(ExposedTarget, ANotifiedButUnwrittenRangeFailsValidationAndIsToldUnusable) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, Listening(heard_)).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const auto claimed = PatternBytes(5, kExposedChunk);
  protocol::Announce a = AddressedAnnounce(*peer, "unwritten", claimed.size(), 0);
  a.digest = DigestOf(claimed);
  ASSERT_TRUE(peer->Send(a).ok());
  PeerSaw saw = peer->Watch("unwritten", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  // The window is notified, but what lands is not the announced content.
  const std::vector<uint8_t> other(claimed.size(), 0x5a);
  ASSERT_TRUE(peer->WriteWindow(saw.grants[0], kExposedChunk, other).ok());
  ASSERT_TRUE(peer->Send(protocol::Commit{"unwritten", a.digest, {}}).ok());
  saw = peer->Watch("unwritten", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "validation");
  EXPECT_EQ(std::count(saw.rungs.begin(), saw.rungs.end(), "validated"), 0);
  ASSERT_EQ(heard_.AwaitCount(1), 1u);
  const TargetDelivery told = heard_.at(0);
  EXPECT_FALSE(told.ok);
  EXPECT_EQ(told.offset, 0u);
  EXPECT_EQ(told.bytes, claimed.size());
  EXPECT_NE(told.why.find("validation failed"), std::string::npos) << told.why;
}

// A write-with-data of no bytes: the chunk's notification without its bytes.
Status NotifyOnly(RawPeer& peer, const protocol::Grant& grant) {
  sender::Link& link = peer.link();
  WRIT_RETURN_IF_ERROR(link.EnsureStaging(kExposedChunk));
  fabric::WriteRequest write;
  write.request_id = link.NextRequestId();
  write.peer = link.peer();
  write.local = &link.staging_region();
  write.length = 0;
  write.remote = fabric::RegionDescriptor{grant.remote_address, grant.key, grant.length};
  write.remote_data = grant.window_id << 16;
  WRIT_RETURN_IF_ERROR(link.node().PostWrite(write).status());
  std::vector<fabric::WorkCompletion> records;
  WRIT_RETURN_IF_ERROR(link.node().Poll(records).status());
  if (records.size() != 1 || !records.front().ok()) {
    return Status::Transport("the memory fabric did not complete the empty write");
  }
  return Status::Ok();
}

// The application already holds the announced bytes in the range: a sender that knows their
// digest and writes nothing is not validated (the range is cleared before it is granted).
TEST_F(ExposedTarget, KnowingTheDigestOfWhatTheBufferHoldsIsNotDeliveringIt) {
  StartRig();
  const auto held = PatternBytes(7, kExposedChunk);
  std::copy(held.begin(), held.end(), buffer_.begin());
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, Listening(heard_)).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = AddressedAnnounce(*peer, "free-ride", held.size(), 0);
  a.digest = DigestOf(held);
  ASSERT_TRUE(peer->Send(a).ok());
  PeerSaw saw = peer->Watch("free-ride", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  ASSERT_TRUE(NotifyOnly(*peer, saw.grants[0]).ok());
  ASSERT_TRUE(peer->Send(protocol::Commit{"free-ride", a.digest, {}}).ok());
  saw = peer->Watch("free-ride", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "validation");
  EXPECT_EQ(std::count(saw.rungs.begin(), saw.rungs.end(), "validated"), 0);
  ASSERT_EQ(heard_.AwaitCount(1), 1u);
  EXPECT_FALSE(heard_.at(0).ok);
}

TEST_F(ExposedTarget, AnUnknownTargetIsRefusedAndNothingIsGranted) {
  StartRig();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "nowhere", 4096, 0, "absent")).ok());
  const PeerSaw saw = peer->Watch("nowhere", kExposedWatch);
  ExpectTargetRefusal(saw, "no target absent is exposed");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTarget, ARangeOutsideTheBufferIsRefused) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "past-end", 8192, buffer_.size() - 4096)).ok());
  const PeerSaw saw = peer->Watch("past-end", kExposedWatch);
  ExpectTargetRefusal(saw, "outside target kv");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTarget, OverlappingDeliveriesInFlightAreRefusedAndAdjacentOnesAreNot) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "first", kExposedChunk, 0)).ok());
  PeerSaw saw = peer->Watch("first", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "overlapping", kExposedChunk, 4096)).ok());
  saw = peer->Watch("overlapping", kExposedWatch);
  ExpectTargetRefusal(saw, "overlap delivery first");
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "adjacent", kExposedChunk, kExposedChunk)).ok());
  saw = peer->Watch("adjacent", kExposedWatch);
  EXPECT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
}

TEST_F(ExposedTarget, RevokeEndsADeliveryInFlightAndNoWriteLandsAfterIt) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, Listening(heard_)).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const auto bytes = PatternBytes(6, kExposedChunk);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "in-flight", bytes.size(), 0)).ok());
  PeerSaw saw = peer->Watch("in-flight", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  const protocol::Grant granted = saw.grants[0];
  ASSERT_TRUE(rig_.receiver().Revoke("kv").ok());
  // Revoke returned: the delivery was refused and its window is no longer registered.
  ASSERT_EQ(heard_.count(), 1u);
  EXPECT_FALSE(heard_.at(0).ok);
  EXPECT_NE(heard_.at(0).why.find("revoked"), std::string::npos) << heard_.at(0).why;
  saw = peer->Watch("in-flight", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "target");
  const uint64_t refused_before = rig_.fabric().counts().access_errors;
  EXPECT_FALSE(peer->WriteWindow(granted, kExposedChunk, bytes).ok())
      << "the revoked window still took a write";
  EXPECT_EQ(rig_.fabric().counts().access_errors, refused_before + 1)
      << "the write was not refused for its closed key";
  EXPECT_TRUE(AllZero(buffer_)) << "a write landed after Revoke returned";

  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "after", 4096, 0)).ok());
  saw = peer->Watch("after", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "target");
  EXPECT_TRUE(saw.grants.empty());
  EXPECT_EQ(rig_.receiver().Revoke("kv").code(), ErrorCode::kNotFound);
}

TEST_F(ExposedTarget, AnAddressedDeliveryHonoursTheAllowList) {
  ReceiverOptions options = rig_.BaseOptions();
  auto allowed = receipt::Identity::Generate();
  ASSERT_TRUE(allowed.ok());
  options.allow_file = rig_.dir() + "/allow";
  std::ofstream(options.allow_file) << receipt::PublicKeyHex(allowed->public_key()) << "\n";
  StartRig(options);
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(AddressedAnnounce(*peer, "anonymous", 4096, 0)).ok());
  const PeerSaw saw = peer->Watch("anonymous", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "auth");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTarget, AStrongerRetentionThanVolatileIsRefused) {
  StartRig();
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = AddressedAnnounce(*peer, "durable", 4096, 0);
  a.retention = RetentionClass::kProcessRestart;
  ASSERT_TRUE(peer->Send(a).ok());
  const PeerSaw saw = peer->Watch("durable", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "retention");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTarget, ExposeRefusesWhatIsNoUsableTarget) {
  StartRig();
  EXPECT_EQ(rig_.receiver().Expose("", buffer_).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rig_.receiver().Expose("empty", {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rig_.receiver().Expose("has space", buffer_).code(), ErrorCode::kInvalidArgument);
  ExposeOptions paged;
  paged.pages = PageGeometry{4096, 257};  // one page more than the 1 MiB buffer holds
  EXPECT_EQ(rig_.receiver().Expose("paged", buffer_, paged).code(), ErrorCode::kInvalidArgument);
  paged.pages = PageGeometry{4096, 256};
  EXPECT_TRUE(rig_.receiver().Expose("paged", buffer_, paged).ok());
  EXPECT_EQ(rig_.receiver().Expose("paged", buffer_).code(), ErrorCode::kInvalidArgument)
      << "a name exposed twice";
  EXPECT_EQ(rig_.receiver().Revoke("never").code(), ErrorCode::kNotFound);
}

TEST(AddressedAnnounce, TheTargetBlockRoundTripsWithAndWithoutARegionTable) {
  protocol::Announce a;
  a.delivery_id = "x";
  a.bytes = 10;
  a.chunk_size = 4;
  a.target = "kv-cache";
  a.target_offset = 1 << 20;
  for (const std::vector<uint64_t>& regions :
       {std::vector<uint64_t>{}, std::vector<uint64_t>{4, 0, 6}}) {
    a.region_lengths = regions;
    const std::vector<uint8_t> frame = protocol::Encode(a);
    auto decoded = protocol::DecodeFrame(frame, protocol::Limits{});
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ASSERT_TRUE(std::holds_alternative<protocol::Announce>(*decoded));
    EXPECT_EQ(std::get<protocol::Announce>(*decoded), a);
  }
}

TEST(AddressedAnnounce, ARingDeliverNamingATargetIsMalformed) {
  protocol::Deliver d;
  d.slot = 0;
  d.announce.delivery_id = "x";
  d.announce.digest = std::vector<uint8_t>(DigestSize(Rule::kXxh3_128));
  d.announce.bytes = 10;
  d.announce.chunk_size = 10;
  d.announce.target = "kv";
  const std::vector<uint8_t> frame = protocol::Encode(d);
  auto decoded = protocol::DecodeFrame(frame, protocol::Limits{});
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("target"), std::string::npos)
      << decoded.status().ToString();
}

}  // namespace
}  // namespace writ::inprocess
