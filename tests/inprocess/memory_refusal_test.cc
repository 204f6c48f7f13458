// Every way the receiver refuses, driven in one process over the MemoryFabric: each test
// asserts the reason the sender is told and that no rung after the refusal is claimed.
// Refusals the public API never provokes are driven with RawPeer (the protocol by hand).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include "memory_rig.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"

namespace writ::inprocess {
namespace {

using namespace std::chrono_literals;
using protocol::RefuseReason;

constexpr auto kWatch = 5000ms;  // a bound for waits that end much sooner

std::string ReasonOf(const PeerSaw& saw) {
  return saw.refusal ? std::string(protocol::RefuseReasonName(saw.refusal->reason)) : "none";
}

std::string ReasonName(RefuseReason reason) {
  return std::string(protocol::RefuseReasonName(reason));
}

// Starts `rig` with `options` (BaseOptions changed by the test) and opens a raw peer.
std::unique_ptr<RawPeer> StartWithPeer(MemoryRig& rig, ReceiverOptions options) {
  Status started = rig.Start(std::move(options));
  EXPECT_TRUE(started.ok()) << started.ToString();
  if (!started.ok()) return nullptr;
  auto peer = RawPeer::Open(rig);
  EXPECT_TRUE(peer.ok()) << peer.status().ToString();
  return peer.ok() ? std::move(peer).value() : nullptr;
}

// What a delivery refused for a full disk is told (see the test).
const std::string kDiskFullReason = "retention";

std::vector<uint8_t> ZeroDigest() { return std::vector<uint8_t>(DigestSize(Rule::kXxh3_128)); }

TEST(MemoryRefusal, ACommitForADeliveryNeverAnnouncedIsUnknownDelivery) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(protocol::Commit{"never-announced", ZeroDigest(), {}}).ok());
  const PeerSaw saw = peer->Watch("never-announced", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kUnknownDelivery));
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, BytesThatAreNoFrameAreMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  const char garbage[] = "\xff\xff\xff\x7fthis is not a writ frame";
  ASSERT_EQ(::send(peer->channel().fd(), garbage, sizeof garbage, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof garbage));
  const PeerSaw saw = peer->Watch("", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
}

TEST(MemoryRefusal, AMessageOnlyAReceiverSendsIsMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Grant grant;
  grant.delivery_id = "backwards";
  grant.chunk_count = 1;
  grant.length = 4096;
  ASSERT_TRUE(peer->Send(grant).ok());
  const PeerSaw saw = peer->Watch("", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
}

TEST(MemoryRefusal, ASenderFabricAddressThatIsNoAddressIsMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = peer->AnnounceOf("bad-address", 4096, 4096);
  a.sender_fabric_address = {1, 2, 3};
  ASSERT_TRUE(peer->Send(a).ok());
  const PeerSaw saw = peer->Watch("bad-address", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, ACommitDigestOfTheWrongSizeIsMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  const auto bytes = PatternBytes(7, 4096);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("short-digest", bytes.size(), 4096)).ok());
  PeerSaw saw = peer->Watch("short-digest", kWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ReasonOf(saw);
  ASSERT_TRUE(peer->WriteWindow(saw.grants.front(), 4096, bytes).ok());
  ASSERT_TRUE(peer->Send(protocol::Commit{"short-digest", {1, 2, 3}, {}}).ok());
  saw = peer->Watch("short-digest", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
  for (const std::string& rung : saw.rungs) EXPECT_NE(rung, "validated");
}

TEST(MemoryRefusal, ADeliveryOverTheSizeLimitIsOversize) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.max_delivery_bytes = 1 << 20;
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("too-big", (1 << 20) + 1, 64 << 10)).ok());
  const PeerSaw saw = peer->Watch("too-big", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kOversize));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, AChunkLargerThanAWindowIsOversize) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());  // 1 MiB windows
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("big-chunk", 4 << 20, 2 << 20)).ok());
  const PeerSaw saw = peer->Watch("big-chunk", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kOversize));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, ACommitThatContradictsTheAnnouncedDigestIsValidation) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = peer->AnnounceOf("two-digests", 4096, 4096);
  a.digest = std::vector<uint8_t>(DigestSize(Rule::kXxh3_128), 0x11);
  ASSERT_TRUE(peer->Send(a).ok());
  PeerSaw saw = peer->Watch("two-digests", kWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ReasonOf(saw);
  ASSERT_TRUE(peer->Send(protocol::Commit{"two-digests", ZeroDigest(), {}}).ok());
  saw = peer->Watch("two-digests", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kValidation));
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, BytesThatDoNotMatchTheirDigestAreReceivedButRefusedAsValidation) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  DeliveryOptions options;
  options.id = "corrupted";
  options.chunk_size = 64 << 10;
  const auto bytes = PatternBytes(8, 3 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(**link, bytes, options, /*corrupt_chunk=*/1);
  EXPECT_EQ(out.status.code(), ErrorCode::kValidation) << out.status.ToString();
  EXPECT_EQ(RungNames(out), (std::vector<std::string>{"transport", "received"}));
  std::vector<uint8_t> held(16);
  EXPECT_FALSE(rig.receiver().Read("corrupted", 0, held).ok()) << "nothing is retained";
}

TEST(MemoryRefusal, AnUnsignedAnnounceToAReceiverWithAnAllowListIsAuth) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  auto allowed = receipt::Identity::Generate();
  ASSERT_TRUE(allowed.ok());
  options.allow_file = rig.dir() + "/allow";
  std::ofstream(options.allow_file) << receipt::PublicKeyHex(allowed->public_key()) << "\n";
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("anonymous", 4096, 4096)).ok());
  const PeerSaw saw = peer->Watch("anonymous", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kAuth));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, AnAnnounceSignedByAKeyNotAllowedIsAuth) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  auto allowed = receipt::Identity::Generate();
  auto stranger = receipt::Identity::Generate();
  ASSERT_TRUE(allowed.ok() && stranger.ok());
  options.allow_file = rig.dir() + "/allow";
  std::ofstream(options.allow_file) << receipt::PublicKeyHex(allowed->public_key()) << "\n";
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = peer->AnnounceOf("stranger", 4096, 4096);
  ASSERT_TRUE(sender::SignAnnounce(*stranger, peer->link().hello().receiver_id, a).ok());
  ASSERT_TRUE(peer->Send(a).ok());
  const PeerSaw saw = peer->Watch("stranger", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kAuth));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, AnUnsignedCommitOfASignedAnnounceIsAuth) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  const auto bytes = PatternBytes(9, 4096);
  protocol::Announce a = peer->AnnounceOf("half-signed", bytes.size(), 4096);
  ASSERT_TRUE(sender::SignAnnounce(*identity, peer->link().hello().receiver_id, a).ok());
  ASSERT_TRUE(peer->Send(a).ok());
  PeerSaw saw = peer->Watch("half-signed", kWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ReasonOf(saw);
  ASSERT_TRUE(peer->WriteWindow(saw.grants.front(), 4096, bytes).ok());
  ASSERT_TRUE(peer->Send(protocol::Commit{"half-signed", ZeroDigest(), {}}).ok());
  saw = peer->Watch("half-signed", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kAuth));
  for (const std::string& rung : saw.rungs) EXPECT_NE(rung, "validated");
}

TEST(MemoryRefusal, AnUnsignedQueryToAReceiverWithAnAllowListIsAuth) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  auto allowed = receipt::Identity::Generate();
  ASSERT_TRUE(allowed.ok());
  options.allow_file = rig.dir() + "/allow";
  std::ofstream(options.allow_file) << receipt::PublicKeyHex(allowed->public_key()) << "\n";
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  protocol::Query query;
  query.delivery_id = "someone-elses";
  ASSERT_TRUE(peer->Send(query).ok());
  const PeerSaw saw = peer->Watch("someone-elses", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kAuth));
}

TEST(MemoryRefusal, ARemovalOfADeliveryNotHeldIsUnknownDelivery) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  protocol::Remove remove;
  remove.delivery_id = "not-held";
  ASSERT_TRUE(sender::SignRemove(*identity, peer->link().hello().receiver_id, remove).ok());
  ASSERT_TRUE(peer->Send(remove).ok());
  const PeerSaw saw = peer->Watch("not-held", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kUnknownDelivery));
}

TEST(MemoryRefusal, AnAnnouncePastTheConnectionsInFlightLimitIsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.max_deliveries_per_connection = 1;
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  EXPECT_EQ(peer->link().hello().max_in_flight, 1u);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("first", 4096, 4096)).ok());
  ASSERT_EQ(peer->Watch("first", kWatch).grants.size(), 1u);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("second", 4096, 4096)).ok());
  const PeerSaw saw = peer->Watch("second", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, AConnectionPastThePerAddressLimitIsRefusedAsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.max_connections_per_address = 1;
  auto first = StartWithPeer(rig, options);
  ASSERT_NE(first, nullptr);
  auto second = rig.OpenLink();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kRefused) << second.status().ToString();
  EXPECT_NE(second.status().message().find("(limit)"), std::string::npos)
      << second.status().ToString();
}

TEST(MemoryRefusal, AnIdInProgressOnThisConnectionIsAConflict) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("twice", 4096, 4096)).ok());
  ASSERT_EQ(peer->Watch("twice", kWatch).grants.size(), 1u);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("twice", 4096, 4096)).ok());
  const PeerSaw saw = peer->Watch("twice", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kConflictingId));
}

TEST(MemoryRefusal, AnIdInProgressOnAnotherConnectionIsAConflict) {
  MemoryRig rig;
  auto first = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(first, nullptr);
  auto second = RawPeer::Open(rig);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(first->Send(first->AnnounceOf("shared-id", 4096, 4096)).ok());
  ASSERT_EQ(first->Watch("shared-id", kWatch).grants.size(), 1u);
  ASSERT_TRUE((*second)->Send((*second)->AnnounceOf("shared-id", 4096, 4096)).ok());
  const PeerSaw saw = (*second)->Watch("shared-id", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kConflictingId));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, AnIdRetainedWithOtherContentIsAConflict) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok());
  DeliveryOptions options;
  options.id = "kept";
  options.chunk_size = 64 << 10;
  const auto first = PatternBytes(10, 8192);
  ASSERT_TRUE(rig.Deliver(**link, first, options).status.ok());
  const auto other = PatternBytes(11, 8192);
  const DeliveryOutcome out = rig.Deliver(**link, other, options);
  EXPECT_EQ(out.status.code(), ErrorCode::kRefused) << out.status.ToString();
  EXPECT_NE(out.status.message().find(ReasonName(RefuseReason::kConflictingId)), std::string::npos)
      << out.status.ToString();
  for (const Receipt& r : out.receipts) EXPECT_NE(r.rung, ReceiptRung::kValidated);
  std::vector<uint8_t> held(first.size());
  ASSERT_TRUE(rig.receiver().Read("kept", 0, held).ok());
  EXPECT_EQ(held, first) << "the first content stays";
}

TEST(MemoryRefusal, ProcessedWithoutAProcessingStepIsUnsupported) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = peer->AnnounceOf("process-me", 4096, 4096);
  a.until = Rung::kProcessed;
  ASSERT_TRUE(peer->Send(a).ok());
  const PeerSaw saw = peer->Watch("process-me", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kUnsupported));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, PowerLossRetentionWithoutADataDirectoryIsRetention) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Announce a = peer->AnnounceOf("keep-forever", 4096, 4096);
  a.retention = RetentionClass::kPowerLoss;
  ASSERT_TRUE(peer->Send(a).ok());
  const PeerSaw saw = peer->Watch("keep-forever", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kRetention));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, ADeliveryLargerThanTheVolatileCapacityIsSpace) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.volatile_capacity_bytes = 64 << 10;
  ASSERT_TRUE(rig.Start(options).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok());
  DeliveryOptions delivery;
  delivery.id = "no-room";
  delivery.chunk_size = 64 << 10;
  const auto bytes = PatternBytes(12, 256 << 10);
  const DeliveryOutcome out = rig.Deliver(**link, bytes, delivery);
  EXPECT_EQ(out.status.code(), ErrorCode::kRefused) << out.status.ToString();
  EXPECT_NE(out.status.message().find(ReasonName(RefuseReason::kSpace)), std::string::npos)
      << out.status.ToString();
  for (const Receipt& r : out.receipts) EXPECT_NE(r.rung, ReceiptRung::kRetained);
}

TEST(MemoryRefusal, AFailingProcessingStepIsProcessingAfterValidated) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.processing = ProcessingStep{
      "always-fails", [](const DeliveryView&) { return Status::Internal("step said no"); }};
  ASSERT_TRUE(rig.Start(options).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok());
  DeliveryOptions delivery;
  delivery.id = "unprocessable";
  delivery.chunk_size = 64 << 10;
  delivery.until = Rung::kProcessed;
  const DeliveryOutcome out = rig.Deliver(**link, PatternBytes(13, 8192), delivery);
  EXPECT_EQ(out.status.code(), ErrorCode::kRefused) << out.status.ToString();
  EXPECT_NE(out.status.message().find(ReasonName(RefuseReason::kProcessing)), std::string::npos)
      << out.status.ToString();
  const auto rungs = RungNames(out);
  EXPECT_NE(std::find(rungs.begin(), rungs.end(), "validated"), rungs.end());
  for (const std::string& rung : rungs) {
    EXPECT_NE(rung, "processed");
    EXPECT_NE(rung, "retained");
  }
}

TEST(MemoryRefusal, AWindowRegistrationThatFailsIsInternal) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.ring_slots = 0;  // the first registration is the delivery's window
  fabric::FaultInjectingFabric* target = nullptr;
  ASSERT_TRUE(
      rig.StartWrapped(options, [&](fabric::FaultInjectingFabric& f) { target = &f; }).ok());
  target->FailRegistration(0);
  auto peer = RawPeer::Open(rig);
  ASSERT_TRUE(peer.ok());
  ASSERT_TRUE((*peer)->Send((*peer)->AnnounceOf("unregistered", 4096, 4096)).ok());
  const PeerSaw saw = (*peer)->Watch("unregistered", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kInternal));
  EXPECT_TRUE(saw.grants.empty());
  EXPECT_EQ(target->counts().registrations_failed, 1u);
}

TEST(MemoryRefusal, ADeliverWithoutAStandingWindowIsMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  protocol::Deliver deliver;
  deliver.slot = 0;
  deliver.announce = peer->AnnounceOf("no-ring", 4096, 4096);
  deliver.announce.digest = ZeroDigest();
  ASSERT_TRUE(peer->Send(deliver).ok());
  const PeerSaw saw = peer->Watch("no-ring", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, ADeliverToASlotOutsideTheRingIsMalformed) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->DeliverByHand("opens-the-ring", PatternBytes(17, 4096)).ok());
  const auto ring = peer->AwaitRing(kWatch);
  ASSERT_TRUE(ring.has_value());
  protocol::Deliver deliver;
  deliver.slot = ring->slot_count;  // one past the last
  deliver.announce = peer->AnnounceOf("past-the-ring", 4096, 4096);
  deliver.announce.digest = ZeroDigest();
  ASSERT_TRUE(peer->Send(deliver).ok());
  const PeerSaw saw = peer->Watch("past-the-ring", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kMalformed));
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, ADeliverToARingSlotStillInUseIsAConflict) {
  MemoryRig rig;
  auto peer = StartWithPeer(rig, rig.BaseOptions());
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->DeliverByHand("opens-the-ring", PatternBytes(17, 4096)).ok());
  ASSERT_TRUE(peer->AwaitRing(kWatch).has_value());
  protocol::Deliver first;
  first.slot = 3;
  first.announce = peer->AnnounceOf("in-slot-3", 4096, 4096);
  first.announce.digest = ZeroDigest();
  ASSERT_TRUE(peer->Send(first).ok());  // its bytes never land: the slot stays claimed
  protocol::Deliver second = first;
  second.announce = peer->AnnounceOf("also-slot-3", 4096, 4096);
  second.announce.digest = ZeroDigest();
  ASSERT_TRUE(peer->Send(second).ok());
  const PeerSaw saw = peer->Watch("also-slot-3", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kConflictingId));
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, AnAnnouncePastTheSendersDeliveryLimitIsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.max_deliveries_per_sender = 1;  // over all of one sender's connections
  auto first = StartWithPeer(rig, options);
  ASSERT_NE(first, nullptr);
  auto second = RawPeer::Open(rig);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(first->Send(first->AnnounceOf("holds-the-place", 4096, 4096)).ok());
  ASSERT_EQ(first->Watch("holds-the-place", kWatch).grants.size(), 1u);
  ASSERT_TRUE((*second)->Send((*second)->AnnounceOf("one-too-many", 4096, 4096)).ok());
  const PeerSaw saw = (*second)->Watch("one-too-many", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_TRUE(saw.grants.empty());
}

TEST(MemoryRefusal, ARemovalByAKeyThatDidNotDeliverIsAuth) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok());
  DeliveryOptions options;
  options.id = "not-yours";
  options.chunk_size = 64 << 10;
  ASSERT_TRUE(rig.Deliver(**link, PatternBytes(15, 4096), options).status.ok());
  auto peer = RawPeer::Open(rig);
  ASSERT_TRUE(peer.ok());
  auto stranger = receipt::Identity::Generate();
  ASSERT_TRUE(stranger.ok());
  protocol::Remove remove;
  remove.delivery_id = "not-yours";
  ASSERT_TRUE(sender::SignRemove(*stranger, (*peer)->link().hello().receiver_id, remove).ok());
  ASSERT_TRUE((*peer)->Send(remove).ok());
  const PeerSaw saw = (*peer)->Watch("not-yours", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kAuth));
  std::vector<uint8_t> held(4096);
  EXPECT_TRUE(rig.receiver().Read("not-yours", 0, held).ok()) << "still held";
}

// The durable store's writes fail with ENOSPC (its Env seam, src/store/fault_env.h).
TEST(MemoryRefusal, ADiskFullWhileRetainingIsRefusedAndNotRetained) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.data_dir = rig.dir() + "/data";
  ASSERT_EQ(::mkdir(options.data_dir.c_str(), 0700), 0);
  ASSERT_TRUE(rig.Start(options, "write@1+=ENOSPC").ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok());
  DeliveryOptions delivery;
  delivery.id = "disk-full";
  delivery.chunk_size = 64 << 10;
  delivery.retention = RetentionClass::kProcessRestart;
  const DeliveryOutcome out = rig.Deliver(**link, PatternBytes(16, 128 << 10), delivery);
  EXPECT_FALSE(out.status.ok());
  EXPECT_NE(out.status.message().find(kDiskFullReason), std::string::npos) << out.status.ToString();
  for (const Receipt& r : out.receipts) EXPECT_NE(r.rung, ReceiptRung::kRetained);
}

// Timeouts: each one short, so the suite stays fast.

TEST(MemoryRefusal, NoAnnounceWithinTheHandshakeTimeoutIsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.handshake_timeout = 100ms;
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = peer->Watch("", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_NE(saw.refusal->detail.find("handshake"), std::string::npos) << saw.refusal->detail;
}

TEST(MemoryRefusal, AnIdleConnectionIsClosedAsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.idle_timeout = 100ms;
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(protocol::Commit{"nothing", ZeroDigest(), {}}).ok());  // a message
  ASSERT_TRUE(peer->Watch("nothing", kWatch).refusal.has_value());
  const PeerSaw saw = peer->Watch("", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_NE(saw.refusal->detail.find("idle"), std::string::npos) << saw.refusal->detail;
}

TEST(MemoryRefusal, AGrantNeverWrittenIsLimitAtTheGrantUnusedTimeout) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.grant_unused_timeout = 150ms;
  auto peer = StartWithPeer(rig, options);
  ASSERT_NE(peer, nullptr);
  ASSERT_TRUE(peer->Send(peer->AnnounceOf("idle-grant", 4096, 4096)).ok());
  ASSERT_EQ(peer->Watch("idle-grant", kWatch).grants.size(), 1u);
  const PeerSaw saw = peer->Watch("idle-grant", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_NE(saw.refusal->detail.find("grant-unused"), std::string::npos) << saw.refusal->detail;
  EXPECT_TRUE(saw.rungs.empty());
}

TEST(MemoryRefusal, NoWindowFreeWithinTheWindowWaitTimeoutIsLimit) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.window_pool_bytes = 1 << 20;  // one window
  options.ring_slots = 0;
  options.window_wait_timeout = 150ms;
  auto holder = StartWithPeer(rig, options);
  ASSERT_NE(holder, nullptr);
  auto waiter = RawPeer::Open(rig);
  ASSERT_TRUE(waiter.ok());
  ASSERT_TRUE(holder->Send(holder->AnnounceOf("holds", 4096, 4096)).ok());
  ASSERT_EQ(holder->Watch("holds", kWatch).grants.size(), 1u);
  ASSERT_TRUE((*waiter)->Send((*waiter)->AnnounceOf("waits", 4096, 4096)).ok());
  const PeerSaw saw = (*waiter)->Watch("waits", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_NE(saw.refusal->detail.find("no window"), std::string::npos) << saw.refusal->detail;
  EXPECT_TRUE(saw.grants.empty());
}

// A notification from a port the receiver never added (FI_SOURCE: FI_ADDR_NOTAVAIL) counts
// for nobody: the bytes land in the window, but the delivery never reaches `received`.
TEST(MemoryRefusal, ANotificationFromAnUnknownWriterIsNotReceived) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.grant_unused_timeout = 200ms;
  auto victim = StartWithPeer(rig, options);
  ASSERT_NE(victim, nullptr);
  ASSERT_TRUE(victim->Send(victim->AnnounceOf("victim", 4096, 4096)).ok());
  const PeerSaw granted = victim->Watch("victim", kWatch);
  ASSERT_EQ(granted.grants.size(), 1u);

  // The forger knows the window (address, key, tag) and writes it from its own port.
  auto forger = rig.fabric().Open(fabric::NodeOptions{});
  ASSERT_TRUE(forger.ok());
  auto target = (*forger)->AddPeer(victim->link().hello().fabric_address);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  auto source = PatternBytes(14, 4096);
  auto region = (*forger)->Register(source.data(), source.size(), fabric::Access::kLocalSource);
  ASSERT_TRUE(region.ok());
  const protocol::Grant& g = granted.grants.front();
  fabric::WriteRequest write;
  write.request_id = 1;
  write.peer = *target;
  write.local = &*region;
  write.length = source.size();
  write.remote = fabric::RegionDescriptor{g.remote_address, g.key, g.length};
  write.remote_data = g.window_id << 16;
  ASSERT_TRUE((*forger)->PostWrite(write).ok());
  ASSERT_TRUE(victim->Send(protocol::Commit{"victim", ZeroDigest(), {}}).ok());

  const PeerSaw saw = victim->Watch("victim", kWatch);
  EXPECT_EQ(ReasonOf(saw), ReasonName(RefuseReason::kLimit));
  EXPECT_TRUE(saw.rungs.empty()) << "a forged notification is no evidence of receipt";
  EXPECT_EQ(rig.fabric().counts().notifications, 1u);
}

TEST(MemoryRefusal, ShutdownRefusesNewAnnouncesAndEndsWhatIsUnfinished) {
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  auto draining = std::make_shared<std::atomic<bool>>(false);
  options.on_connection_event = [draining](const std::string& line) {
    if (line.rfind("shutting down", 0) == 0) draining->store(true);
  };
  auto unfinished = StartWithPeer(rig, options);
  ASSERT_NE(unfinished, nullptr);
  auto late = RawPeer::Open(rig);
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE(unfinished->Send(unfinished->AnnounceOf("unfinished", 4096, 4096)).ok());
  ASSERT_EQ(unfinished->Watch("unfinished", kWatch).grants.size(), 1u);

  auto summary = std::async(std::launch::async, [&] { return rig.receiver().Shutdown(300ms); });
  while (!draining->load()) std::this_thread::sleep_for(1ms);
  auto refused_connection = rig.OpenLink();
  ASSERT_FALSE(refused_connection.ok());
  EXPECT_NE(refused_connection.status().message().find(ReasonName(RefuseReason::kShuttingDown)),
            std::string::npos)
      << refused_connection.status().ToString();
  ASSERT_TRUE((*late)->Send((*late)->AnnounceOf("late", 4096, 4096)).ok());
  const PeerSaw refused_late = (*late)->Watch("late", kWatch);
  EXPECT_EQ(ReasonOf(refused_late), ReasonName(RefuseReason::kShuttingDown));
  EXPECT_TRUE(refused_late.grants.empty());

  const PeerSaw ended = unfinished->Watch("unfinished", kWatch);
  EXPECT_EQ(ReasonOf(ended), ReasonName(RefuseReason::kShuttingDown));
  EXPECT_TRUE(ended.rungs.empty());
  auto done = summary.get();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(done->deadline_passed);
  EXPECT_EQ(done->aborted, std::vector<std::string>{"unfinished"});
}

}  // namespace
}  // namespace writ::inprocess
