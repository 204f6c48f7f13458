// Admission's steps alone (receiver/admission.h): each check's verdict and the words of its
// refusal, and the claims an AdmittedDelivery holds and gives back. No network, no fabric.
#include "receiver/admission.h"

#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "receipt/identity.h"
#include "receiver/receiver_core.h"

namespace writ::receiver {
namespace {

using protocol::RefuseReason;

protocol::Announce AnnounceOf(const std::string& id) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = 1000;
  a.chunk_size = 100;
  a.rule = Rule::kCrc32c;
  a.digest = {1, 2, 3, 4};
  a.retention = RetentionClass::kProcessRestart;
  return a;
}

store::RetainedDelivery HeldLike(const protocol::Announce& a) {
  store::RetainedDelivery held;
  held.meta = store::DeliveryMeta{a.delivery_id, a.bytes, a.chunk_size, a.rule,
                                  a.digest,      "",      false,        a.region_lengths};
  held.retention = a.retention;
  return held;
}

TEST(AdmissionCheck, NothingIsAdmittedOnceShutdownHasBegun) {
  const auto a = AnnounceOf("d-3");
  EXPECT_FALSE(admission::NotShuttingDown(a, false));
  const auto refusal = admission::NotShuttingDown(a, true);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->reason, RefuseReason::kShuttingDown);
  EXPECT_NE(refusal->detail.find("shutting down"), std::string::npos) << refusal->detail;
}

TEST(AdmissionCheck, NothingIsAdmittedOnceTheFabricStoppedMakingProgress) {
  const auto a = AnnounceOf("d-4");
  EXPECT_FALSE(admission::FabricProgressing(a, Status::Ok()));
  const auto refusal =
      admission::FabricProgressing(a, Status::Transport("polling the completion queue failed"));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->delivery_id, "d-4");
  EXPECT_EQ(refusal->reason, RefuseReason::kInternal);
  EXPECT_NE(refusal->detail.find("no longer makes progress"), std::string::npos) << refusal->detail;
  EXPECT_NE(refusal->detail.find("polling the completion queue failed"), std::string::npos)
      << refusal->detail;
}

TEST(AdmissionCheck, DeliveriesInFlightPerConnectionAreLimited) {
  const auto a = AnnounceOf("d-2");
  EXPECT_FALSE(admission::WithinInFlightLimit(a, 0, 1));
  EXPECT_FALSE(admission::WithinInFlightLimit(a, 63, 64));
  EXPECT_EQ(admission::WithinInFlightLimit(a, 64, 64),
            (protocol::Refuse{"d-2", RefuseReason::kLimit,
                              "this connection already has 64 deliveries in progress, its limit "
                              "(max_in_flight 64 in the hello)"}));
}

TEST(AdmissionCheck, AnIdIsInProgressOnceOnAConnection) {
  const auto a = AnnounceOf("d-2");
  EXPECT_FALSE(admission::NotInProgressHere(a, false));
  const auto refusal = admission::NotInProgressHere(a, true);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->reason, RefuseReason::kConflictingId);
}

TEST(AdmissionCheck, SenderChecksNameWhatIsWrong) {
  const auto a = AnnounceOf("d");
  EXPECT_FALSE(admission::SignedAsAllowed(a, Status::Ok()));
  EXPECT_EQ(admission::SignedAsAllowed(a, Status::Validation("key not allowed")),
            (protocol::Refuse{"d", RefuseReason::kAuth, "key not allowed"}));
  EXPECT_EQ(
      admission::ConnectionLimitReached(a, "k1", 3),
      (protocol::Refuse{"d", RefuseReason::kLimit, "sender k1 already has 3 connections open"}));
  EXPECT_FALSE(admission::SenderAddressUsable(a, Status::Ok()));
  EXPECT_EQ(admission::SenderAddressUsable(a, Status::InvalidArgument("bad"))->detail,
            "sender fabric address: bad");
}

TEST(AdmissionCheck, UncheckedProviderAdmitsOnlyTheReceiversOwnUser) {
  const auto a = AnnounceOf("d");
  EXPECT_FALSE(admission::SameUserOverUncheckedProvider(a, "shm", Result<uid_t>(uid_t{7}), 7));
  auto other = admission::SameUserOverUncheckedProvider(a, "shm", Result<uid_t>(uid_t{8}), 7);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->reason, RefuseReason::kAuth);
  EXPECT_EQ(other->detail,
            "provider shm does not check memory keys, so this receiver admits only its own user "
            "(uid 7) over it; the sender is uid 8");
  auto unknown = admission::SameUserOverUncheckedProvider(
      a, "shm", Result<uid_t>(Status::NotFound("no such socket")), 7);
  ASSERT_TRUE(unknown);
  EXPECT_NE(unknown->detail.find("the sender is no such socket"), std::string::npos)
      << unknown->detail;
}

TEST(AdmissionCheck, RequestChecksAgainstWhatThisReceiverOffers) {
  auto a = AnnounceOf("d");
  EXPECT_FALSE(admission::WithinSizeLimit(a, 1000));
  EXPECT_EQ(
      admission::WithinSizeLimit(a, 999),
      (protocol::Refuse{"d", RefuseReason::kOversize,
                        "delivery of 1000 bytes exceeds this receiver's limit of 999 bytes"}));
  EXPECT_FALSE(admission::ChunkFitsWindow(a, 100));
  EXPECT_EQ(admission::ChunkFitsWindow(a, 64),
            (protocol::Refuse{"d", RefuseReason::kOversize,
                              "chunk size 100 exceeds this receiver's window of 64 bytes"}));
  EXPECT_FALSE(admission::ProcessingOffered(a, false)) << "not asked for";
  a.until = Rung::kProcessed;
  EXPECT_FALSE(admission::ProcessingOffered(a, true));
  EXPECT_EQ(admission::ProcessingOffered(a, false)->reason, RefuseReason::kUnsupported);
  EXPECT_FALSE(admission::RetentionOffered(a, true));
  EXPECT_EQ(admission::RetentionOffered(a, false),
            (protocol::Refuse{"d", RefuseReason::kRetention,
                              "this receiver does not offer process-restart retention (without "
                              "--data only volatile is offered)"}));
}

TEST(AdmissionCheck, AnIdAlreadyHeldMustMatchItsContentAndAStrongerClassUpgradesIt) {
  const auto a = AnnounceOf("d");
  EXPECT_FALSE(admission::StoreLookedUp(a, Status::Ok()));
  EXPECT_EQ(admission::StoreLookedUp(a, Status::Internal("index gone"))->reason,
            RefuseReason::kInternal);

  store::RetainedDelivery held = HeldLike(a);
  EXPECT_FALSE(admission::SameContentAsHeld(a, held));
  EXPECT_FALSE(admission::UpgradesHeld(a, held));
  held.meta.digest = {9, 9, 9, 9};
  EXPECT_EQ(admission::SameContentAsHeld(a, held),
            (protocol::Refuse{"d", RefuseReason::kConflictingId,
                              "delivery d is already retained with other content"}));
  protocol::Announce unknown = a;  // no digest announced: compared after validation
  unknown.digest.clear();
  EXPECT_FALSE(admission::SameContentAsHeld(unknown, held));
  unknown.bytes += 1;
  EXPECT_TRUE(admission::SameContentAsHeld(unknown, held));
  protocol::Announce regions = a;  // the same bytes cut into other regions: another object
  regions.region_lengths = {a.bytes};
  held = HeldLike(a);
  EXPECT_TRUE(admission::SameContentAsHeld(regions, held));
  held = HeldLike(regions);
  EXPECT_FALSE(admission::SameContentAsHeld(regions, held));
  EXPECT_TRUE(admission::SameContentAsHeld(a, held));
  held = HeldLike(a);
  held.retention = RetentionClass::kVolatile;
  EXPECT_TRUE(admission::UpgradesHeld(a, held));  // volatile held, process-restart asked
  held.retention = RetentionClass::kPowerLoss;
  EXPECT_FALSE(admission::UpgradesHeld(a, held));  // a weaker class is answered, not upgraded
}

TEST(AdmissionCheck, TheCommitsDigestFitsTheRuleAndAgreesWithTheAnnouncedOne) {
  protocol::Announce a = AnnounceOf("d");
  EXPECT_FALSE(admission::CommitUsable(a, protocol::Commit{"d", {1, 2, 3, 4}, {}}, "r"));
  const auto differs = admission::CommitUsable(a, protocol::Commit{"d", {1, 2, 3, 5}, {}}, "r");
  ASSERT_TRUE(differs);
  EXPECT_EQ(differs->reason, RefuseReason::kValidation);
  EXPECT_EQ(differs->detail, "the commit's crc32c digest 01020305 is not the announced 01020304");
  const auto size = admission::CommitUsable(a, protocol::Commit{"d", {1, 2}, {}}, "r");
  ASSERT_TRUE(size);
  EXPECT_EQ(size->reason, RefuseReason::kMalformed);
  EXPECT_EQ(size->detail, "commit.digest: 2 bytes, crc32c needs 4");
  a.digest.clear();  // not announced: any digest of the rule's size is the one to match
  EXPECT_FALSE(admission::CommitUsable(a, protocol::Commit{"d", {7, 7, 7, 7}, {}}, "r"));
}

TEST(AdmissionCheck, ASignedAnnouncesCommitIsSignedByItsKeyForThisReceiver) {
  auto me = receipt::Identity::Generate().value();
  protocol::Announce a = AnnounceOf("d");
  a.digest.clear();
  a.sender_key.assign(me.public_key().begin(), me.public_key().end());
  a.nonce = std::vector<uint8_t>(16, 0x33);
  protocol::Commit c{"d", {1, 2, 3, 4}, {}};
  const auto sign = [&](const std::string& receiver, const std::vector<uint8_t>& nonce) {
    auto sig = me.Sign(protocol::CommitSigningBytes(c, receiver, nonce)).value();
    c.signature.assign(sig.begin(), sig.end());
  };
  EXPECT_EQ(admission::CommitUsable(a, c, "r")->reason, RefuseReason::kAuth) << "unsigned";
  sign("r", a.nonce);
  EXPECT_FALSE(admission::CommitUsable(a, c, "r"));
  EXPECT_EQ(admission::CommitUsable(a, c, "other")->reason, RefuseReason::kAuth);
  sign("r", std::vector<uint8_t>(16, 0x44));  // another announce's nonce
  EXPECT_EQ(admission::CommitUsable(a, c, "r")->reason, RefuseReason::kAuth);
  sign("r", a.nonce);
  c.digest = {1, 2, 3, 5};  // changed after signing
  EXPECT_EQ(admission::CommitUsable(a, c, "r")->reason, RefuseReason::kAuth);
  protocol::Announce unsigned_announce = AnnounceOf("d");
  EXPECT_EQ(admission::CommitUsable(unsigned_announce, c, "r")->reason, RefuseReason::kAuth);
}

TEST(AdmissionCheck, OnlyTheAuthenticatedSenderThatDeliveredIsAnsweredFromTheStore) {
  store::RetainedDelivery held = HeldLike(AnnounceOf("d"));
  EXPECT_FALSE(admission::HeldForThisSender(held, "")) << "unsigned: must send the bytes";
  held.meta.sender = "key-a";
  EXPECT_TRUE(admission::HeldForThisSender(held, "key-a"));
  EXPECT_FALSE(admission::HeldForThisSender(held, "key-b"));
  EXPECT_FALSE(admission::HeldForThisSender(held, ""));
}

TEST(AdmittedDelivery, HoldsItsIdAndPlaceUntilItEnds) {
  ReceiverCore core;
  core.options.max_deliveries_per_sender = 1;
  const auto a = AnnounceOf("d-1");
  {
    auto admitted = AdmittedDelivery::Claim(core, a, "s");
    ASSERT_TRUE(std::holds_alternative<AdmittedDelivery>(admitted));
    EXPECT_EQ(core.IdActive("d-1"), true);
    EXPECT_EQ(core.UsageOf("s", SenderUsage::kDeliveries), 1u);

    // The same id elsewhere: refused, and nothing more is held.
    auto again = AdmittedDelivery::Claim(core, a, "t");
    ASSERT_TRUE(std::holds_alternative<protocol::Refuse>(again));
    EXPECT_EQ(std::get<protocol::Refuse>(again),
              (protocol::Refuse{"d-1", RefuseReason::kConflictingId,
                                "delivery d-1 is in progress on another connection"}));
    EXPECT_EQ(core.HoldsAny("t"), false);

    // Another id over the sender's limit: refused, and its id is free again.
    auto over = AdmittedDelivery::Claim(core, AnnounceOf("d-2"), "s");
    ASSERT_TRUE(std::holds_alternative<protocol::Refuse>(over));
    EXPECT_EQ(std::get<protocol::Refuse>(over),
              (protocol::Refuse{"d-2", RefuseReason::kLimit,
                                "sender s already has 1 deliveries in progress"}));
    EXPECT_EQ(core.IdActive("d-2"), false);

    // Handed over (moved) it still holds both.
    std::optional<AdmittedDelivery> kept;
    kept.emplace(std::move(std::get<AdmittedDelivery>(admitted)));
    EXPECT_EQ(core.IdActive("d-1"), true);
  }
  EXPECT_EQ(core.ActiveIds(), 0u);
  EXPECT_EQ(core.SendersHolding(), 0u) << "the sender's place given back";
}

TEST(Reservation, GivesBackOnceWhenItEndsOrIsReplaced) {
  ReceiverCore core;
  core.options.max_connections_per_sender = 1;
  std::optional<Reservation> slot = Reservation::Take(core, "k1", SenderUsage::kConnections);
  ASSERT_TRUE(slot);
  EXPECT_FALSE(Reservation::Take(core, "k1", SenderUsage::kConnections)) << "at its limit";
  Reservation moved = std::move(*slot);
  slot.reset();  // a moved-from reservation gives back nothing
  EXPECT_EQ(core.UsageOf("k1", SenderUsage::kConnections), 1u);
  moved = *Reservation::Take(core, "k2", SenderUsage::kConnections);  // k1's is given back
  EXPECT_EQ(core.HoldsAny("k1"), false);
  EXPECT_EQ(moved.sender(), "k2");
}

}  // namespace
}  // namespace writ::receiver
