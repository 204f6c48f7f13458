// Whole deliveries in one process over the MemoryFabric: every rung with receipts that
// verify, many deliveries over one link, and what the fabric itself did.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/hex.h"
#include "memory_rig.h"
#include "receipt/identity.h"
#include "sender/delivery_source.h"
#include "sender/session.h"
#include "vocabulary/digest.h"

namespace writ::inprocess {
namespace {

const std::vector<std::string> kRungsToRetained = {"transport", "received", "validated",
                                                   "retained"};

DeliveryOptions ValidatedVolatile(const std::string& id, uint64_t chunk_size = 64 << 10) {
  DeliveryOptions options;
  options.id = id;
  options.chunk_size = chunk_size;
  options.until = Rung::kValidated;
  options.retention = RetentionClass::kVolatile;
  return options;
}

TEST(MemoryDelivery, AWholeDeliveryReachesValidatedAndRetainedWithReceiptsThatVerify) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  EXPECT_EQ((*link)->hello().provider, "memory");

  const auto bytes = PatternBytes(1, 5 * (64 << 10) + 123);
  const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile("whole"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(RungNames(out), kRungsToRetained);
  EXPECT_EQ(out.reached_retention, RetentionClass::kVolatile);
  const std::string key = rig.receiver().public_key_hex();
  for (const Receipt& r : out.receipts) {
    // The transport rung is the sender's own (unsigned without an identity); every rung
    // the receiver claims is signed by its key.
    if (r.rung == ReceiptRung::kTransport) continue;
    EXPECT_TRUE(VerifyReceipt(r, key).ok()) << ReceiptRungName(r.rung);
  }

  std::vector<uint8_t> held(bytes.size());
  ASSERT_TRUE(rig.receiver().Read("whole", 0, held).ok());
  EXPECT_EQ(held, bytes);
  const fabric::MemoryFabricCounts counts = rig.fabric().counts();
  EXPECT_EQ(counts.writes, 6u);
  EXPECT_EQ(counts.bytes_placed, bytes.size());
  EXPECT_EQ(counts.notifications, 6u);
  EXPECT_EQ(counts.access_errors, 0u);
}

TEST(MemoryDelivery, SmallDeliveriesOneAfterAnotherAllReachRetained) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  for (int i = 0; i < 20; ++i) {
    const auto bytes = PatternBytes(100 + i, 4096);
    const std::string id = "small-" + std::to_string(i);
    const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile(id));
    ASSERT_TRUE(out.status.ok()) << id << ": " << out.status.ToString();
    EXPECT_EQ(RungNames(out), kRungsToRetained) << id;
    std::vector<uint8_t> held(bytes.size());
    ASSERT_TRUE(rig.receiver().Read(id, 0, held).ok()) << id;
    EXPECT_EQ(held, bytes) << id;
  }
}

// A sender with an identity signs each ring delivery's announce, which carries the digest
// (its `deliver` has no commit of its own), and its transport receipt: two signatures a
// delivery, and one verification on the receiver (the announce's).
TEST(MemoryDelivery, ASignedRingDeliveryIsSignedTwiceBySenderAndVerifiedOnce) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  // The first delivery opens the standing window; the rest go through it.
  ASSERT_TRUE(
      rig.Deliver(**link, PatternBytes(1, 4096), ValidatedVolatile("signed-0"), {}, &*identity)
          .status.ok());
  for (int i = 1; i <= 4; ++i) {
    const uint64_t signed_before = identity->signatures_made();
    const uint64_t verified_before = receipt::VerificationsMade();
    const std::string id = "signed-" + std::to_string(i);
    const DeliveryOutcome out =
        rig.Deliver(**link, PatternBytes(1 + i, 4096), ValidatedVolatile(id), {}, &*identity);
    ASSERT_TRUE(out.status.ok()) << id << ": " << out.status.ToString();
    ASSERT_TRUE(out.ring) << id;
    EXPECT_EQ(RungNames(out), kRungsToRetained) << id;
    EXPECT_EQ(identity->signatures_made() - signed_before, 2u) << id;
    EXPECT_EQ(receipt::VerificationsMade() - verified_before, 1u) << id;
  }
}

// A session signs the announces of the deliveries it starts together once: submitted before
// it starts, 24 deliveries start in its first pass (through windows: no ring yet), so their
// announces cost the receiver one verification (each commit, signed alone, one more). The
// transport receipts made in one turn share a signature too (how many turns that takes is
// the machine's), and each verifies alone under the sender's key.
TEST(MemoryDelivery, ASessionSignsTheAnnouncesItStartsTogetherOnce) {
  constexpr uint32_t kMany = 24;
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.max_deliveries_per_sender = kMany;
  options.max_deliveries_per_connection = kMany;
  ASSERT_TRUE(rig.Start(options).ok());
  SessionOptions session_options;
  session_options.depth = kMany;
  session_options.max_in_flight = kMany;
  auto link = rig.OpenLink(session_options);
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  sender::Session session(std::move(*link), &*identity, nullptr, kMany);
  ASSERT_EQ(session.max_in_flight(), kMany);
  const auto bytes = PatternBytes(9, 4096);
  std::vector<DeliveryHandle> handles;
  for (uint32_t i = 0; i < kMany; ++i) {
    auto sub = std::make_unique<sender::Submission>();
    sub->options = ValidatedVolatile("together-" + std::to_string(i));
    sub->out.status = sender::Prepare(sender::DeliverySource::FromBytes(bytes, sub->options.id),
                                      sub->options, nullptr, sub->out, sub->prepared);
    ASSERT_TRUE(sub->out.status.ok()) << sub->out.status.ToString();
    handles.emplace_back(sub->state);
    session.Submit(std::move(sub));
  }
  const uint64_t verified_before = receipt::VerificationsMade();
  ASSERT_TRUE(session.Start().ok());
  for (auto& handle : handles) (void)handle.Wait();
  EXPECT_EQ(receipt::VerificationsMade() - verified_before, 1u + kMany);
  // One for the announces, one a commit, at most one a transport receipt.
  EXPECT_LE(identity->signatures_made(), 1u + 2 * kMany);
  const std::string sender_key = writ::ToHex(identity->public_key());
  for (auto& handle : handles) {
    const DeliveryOutcome& out = handle.Wait();
    ASSERT_TRUE(out.status.ok()) << out.delivery.id << ": " << out.status.ToString();
    EXPECT_EQ(RungNames(out), kRungsToRetained) << out.delivery.id;
    ASSERT_FALSE(out.receipts.empty());
    const Receipt& transport = *out.receipts.begin();
    ASSERT_EQ(transport.rung, ReceiptRung::kTransport);
    EXPECT_TRUE(VerifyReceipt(transport, sender_key).ok()) << out.delivery.id;
  }
  (void)session.Close();
}

TEST(MemoryDelivery, AWrongKeyIsAnErrorRecordAtTheWriterAndNothingIsClaimed) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  fabric::FaultInjectingFabric* initiator = nullptr;
  SessionOptions one_write;  // chunk 1 is never posted after chunk 0's error
  one_write.depth = 1;
  auto link = rig.OpenLink(one_write, [&](fabric::FaultInjectingFabric& f) { initiator = &f; });
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  fabric::WriteFaultSpec wrong_key;
  wrong_key.fault = fabric::WriteFault::kWrongKey;
  initiator->FailWrite(0, wrong_key);

  const auto bytes = PatternBytes(2, 2 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile("wrong-key"));
  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  ASSERT_FALSE(out.work_completions.empty());
  EXPECT_FALSE(out.work_completions.front().ok);
  EXPECT_EQ(out.work_completions.front().status, "FI_EIO");
  EXPECT_EQ(out.work_completions.front().provider_errno, 10);
  EXPECT_TRUE(out.receipts.empty()) << "not even the transport rung";
  EXPECT_EQ(rig.fabric().counts().access_errors, 1u);
  EXPECT_EQ(rig.fabric().counts().notifications, 0u);
}

// The one-line document (what the Python package parses) says what the indented one does,
// for a delivery that reached retained and for one that failed.
TEST(MemoryDelivery, TheCompactOutcomeDocumentIsTheIndentedOneOnOneLine) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const DeliveryOptions options = ValidatedVolatile("compact");
  DeliveryOutcome out = rig.Deliver(**link, PatternBytes(3, 3 * (64 << 10)), options);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  ASSERT_EQ(out.receipts.size(), 4u);
  for (int pass = 0; pass < 2; ++pass) {
    const std::string compact = OutcomeToCompactJson(out, options);
    EXPECT_EQ(compact.find('\n'), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(compact), nlohmann::json::parse(OutcomeToJson(out, options)));
    out.status = Status::Refused("space: a refusal's document has its error member");
    ReceiptList fewer;  // all but the last, as texts
    for (size_t i = 0; i + 1 < out.receipts.size(); ++i) {
      ASSERT_TRUE(fewer.AddText(out.receipts.Text(i)).ok());
    }
    out.receipts = fewer;
  }
}

// The sender keeps each receipt as the text the receiver signed and sent, not a rewriting of
// it: the same bytes as the receiver's store holds, in the compact document too; read as
// receipts, they verify under the receiver's key.
TEST(MemoryDelivery, TheOutcomeKeepsEachReceiptAsTheReceiverSignedIt) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const DeliveryOptions options = ValidatedVolatile("as-signed");
  const DeliveryOutcome out = rig.Deliver(**link, PatternBytes(4, 70000), options);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  auto held = rig.receiver().Held("as-signed");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  std::vector<std::string> receivers_texts;
  for (size_t i = 0; i < out.receipts.size(); ++i) {
    if (out.receipts.rung(i) != ReceiptRung::kTransport) {
      receivers_texts.push_back(out.receipts.Text(i));
    }
  }
  EXPECT_EQ(receivers_texts, held->receipts);
  const std::string compact = OutcomeToCompactJson(out, options);
  for (const std::string& text : receivers_texts) {
    EXPECT_NE(compact.find(text), std::string::npos) << text;
  }
  for (const Receipt& r : out.receipts) {
    if (r.rung == ReceiptRung::kTransport) continue;
    EXPECT_TRUE(VerifyReceipt(r, rig.receiver().public_key_hex()).ok()) << ReceiptRungName(r.rung);
  }
}

// Issue #26: a connection signs once per pass of its loop, every rung of every delivery
// that pass finished in one Merkle group. 32 ring deliveries whose bytes landed first and
// whose `deliver` messages arrive in one write are finished in one pass: one signature for
// their 96 receipts, where one per delivery was made before.
TEST(MemoryDelivery, DeliveriesFinishedInOnePassShareOneSignature) {
  constexpr uint32_t kMany = 32;
  MemoryRig rig;
  ReceiverOptions options = rig.BaseOptions();
  options.ring_slots = kMany;
  options.max_deliveries_per_connection = 2 * kMany;
  options.max_deliveries_per_sender = 2 * kMany;
  ASSERT_TRUE(rig.Start(options).ok());
  auto peer = RawPeer::Open(rig);
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  RawPeer& raw = **peer;
  ASSERT_TRUE(raw.DeliverByHand("opens-the-ring", PatternBytes(7, 4096)).ok());
  const auto ring = raw.AwaitRing(std::chrono::seconds(5));
  ASSERT_TRUE(ring.has_value());
  ASSERT_GE(ring->slot_count, kMany);

  std::vector<protocol::Deliver> delivers;
  for (uint32_t i = 0; i < kMany; ++i) {
    const auto bytes = PatternBytes(300 + i, 4096);
    ASSERT_TRUE(raw.WriteRingSlot(*ring, i, bytes).ok());
    auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
    ASSERT_TRUE(digester.ok());
    (*digester)->Update(bytes);
    protocol::Deliver deliver;
    deliver.slot = i;
    deliver.announce = raw.AnnounceOf("one-pass-" + std::to_string(i), 4096, 4096);
    deliver.announce.digest = (*digester)->Finish();
    delivers.push_back(std::move(deliver));
  }
  // Their notifications reach the receiver's connection before the `deliver`s, so that the
  // `deliver`s finish the deliveries: the receiver's progress thread has read them (it routes
  // each to the connection's inbox as it reads it).
  ASSERT_TRUE(rig.fabric().AwaitNotificationsRead(kMany + 1, std::chrono::seconds(5)));
  raw.channel().Cork();  // every `deliver` in one write: one pass reads them all
  for (const protocol::Deliver& deliver : delivers) ASSERT_TRUE(raw.Send(deliver).ok());
  ASSERT_TRUE(raw.channel().Uncork().ok());

  std::set<std::string> retained;
  std::set<std::string> signatures;  // the distinct group signatures seen
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (retained.size() < kMany && std::chrono::steady_clock::now() < deadline) {
    auto message = raw.channel().Receive(std::chrono::milliseconds(20));
    if (!message.ok()) {
      ASSERT_EQ(message.status().code(), ErrorCode::kTimeout) << message.status().ToString();
      continue;
    }
    ASSERT_EQ(std::get_if<protocol::Refuse>(&*message), nullptr);
    for (const protocol::Receipt* receipt : protocol::ReceiptsOf(*message)) {
      auto parsed = ReceiptFromJson(receipt->json);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      EXPECT_TRUE(VerifyReceipt(*parsed, rig.receiver().public_key_hex()).ok());
      signatures.insert(nlohmann::json::parse(receipt->json)["signature"]["value"].dump());
      if (parsed->rung == ReceiptRung::kRetained) retained.insert(receipt->delivery_id);
    }
  }
  ASSERT_EQ(retained.size(), kMany);
  // One pass when the machine lets the connection read all 32 at once; a loaded machine may
  // split them over a few passes (a pass leaves its group to the next while input waits,
  // up to 8 passes), never one signature per delivery as before.
  EXPECT_LE(signatures.size(), 4u) << "the pass's receipts under one group signature";
  auto summary = rig.receiver().Shutdown(std::chrono::milliseconds(1000));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->receipts_signed, 3u * (kMany + 1)) << "received, validated, retained each";
  EXPECT_LE(summary->signatures, 1u + 4u) << "one for the first delivery, one for the pass";
}

}  // namespace
}  // namespace writ::inprocess
