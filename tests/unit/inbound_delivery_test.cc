#include "receiver/inbound_delivery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <thread>

#include "fabric/node.h"
#include "receiver/notification_router.h"
#include "receiver/window_pool.h"
#include "requirement.h"

namespace writ::receiver {
namespace {

class MemoryWriter : public store::PayloadWriter {
 public:
  explicit MemoryWriter(std::map<uint64_t, std::vector<uint8_t>>& writes) : writes_(writes) {}
  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    writes_[offset].assign(bytes.begin(), bytes.end());
    return Status::Ok();
  }
  Status Read(uint64_t, std::span<uint8_t>) override { return Status::Ok(); }
  void SetDigest(std::vector<uint8_t>) override {}
  Result<store::RetentionEvidence> Commit(const std::vector<std::string>&) override {
    return store::RetentionEvidence{};
  }

 private:
  std::map<uint64_t, std::vector<uint8_t>>& writes_;
};

struct Fixture {
  std::vector<uint8_t> memory = std::vector<uint8_t>(64);
  std::map<uint64_t, std::vector<uint8_t>> writes;
  std::unique_ptr<DigestPool> digests = DigestPool::Start(2).value();
  std::unique_ptr<InboundDelivery> delivery;

  Fixture() {
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<uint8_t>(i);
    protocol::Announce a;
    a.delivery_id = "d";
    a.bytes = 50;  // chunks of 10: five chunks
    a.chunk_size = 10;
    a.rule = Rule::kCrc32c;
    delivery = std::make_unique<InboundDelivery>(
        a, std::move(digests->Open(Rule::kCrc32c, a.bytes, nullptr)).value(),
        std::make_unique<MemoryWriter>(writes));
  }

  // The consumed windows, once the workers have digested them all.
  std::vector<LiveWindow> Digested() {
    while (!delivery->all_digested()) std::this_thread::yield();
    return delivery->TakeDigested();
  }

  void AddWindow(uint16_t tag, uint64_t window_bytes, fabric::MemoryRegion region = {}) {
    LiveWindow w;
    w.region = std::move(region);
    w.tag = tag;
    w.first_chunk = delivery->next_grant_chunk();
    w.chunk_count = delivery->ChunksForWindow(window_bytes);
    w.length = delivery->BytesForChunks(w.first_chunk, w.chunk_count);
    w.data = memory.data() + w.first_chunk * 10;
    delivery->AddWindow(std::move(w));
  }
};

// Where notifications name no writer (rxm), a chunk needs its notification and its
// sender's `written`, in either order; neither alone, nor either twice, counts it.
TEST(InboundDelivery, AnAttestedChunkCountsOnlyWithBothItsNotificationAndItsWritten) {
  Fixture f;
  f.AddWindow(7, 30);  // chunks 0..2
  f.AddWindow(8, 30);  // chunks 3..4
  for (uint16_t c = 0; c < 3; ++c) {
    ASSERT_TRUE(f.delivery->OnLanding(7, c, Landing::kNotified, kNotifiedAndAttested).ok());
    ASSERT_TRUE(f.delivery->OnLanding(7, c, Landing::kNotified, kNotifiedAndAttested).ok());
  }
  ASSERT_TRUE(f.delivery->Consume().ok());
  EXPECT_EQ(f.delivery->received_chunks(), 0u) << "notifications alone counted";
  EXPECT_TRUE(f.writes.empty()) << "a window was consumed on notifications alone";
  ASSERT_TRUE(f.delivery->OnLanding(8, 0, Landing::kAttested, kNotifiedAndAttested).ok());
  ASSERT_TRUE(f.delivery->OnLanding(8, 1, Landing::kAttested, kNotifiedAndAttested).ok());
  EXPECT_EQ(f.delivery->received_chunks(), 0u) << "attestations alone counted";
  for (uint16_t c = 0; c < 3; ++c) {
    ASSERT_TRUE(f.delivery->OnLanding(7, c, Landing::kAttested, kNotifiedAndAttested).ok());
  }
  ASSERT_TRUE(f.delivery->OnLanding(8, 0, Landing::kNotified, kNotifiedAndAttested).ok());
  ASSERT_TRUE(f.delivery->OnLanding(8, 1, Landing::kNotified, kNotifiedAndAttested).ok());
  EXPECT_EQ(f.delivery->received_chunks(), 5u);
  ASSERT_TRUE(f.delivery->Consume().ok());
  EXPECT_EQ(f.Digested().size(), 2u);
  EXPECT_EQ(f.delivery->OnLanding(8, 2, Landing::kAttested, kNotifiedAndAttested).code(),
            ErrorCode::kNotFound)
      << "window 8 was consumed";
}

TEST(InboundDelivery, ConsumesWholeWindowsInOrderOnceAllTheirChunksAreNotified) {
  Fixture f;
  f.AddWindow(7, 30);  // chunks 0..2
  f.AddWindow(8, 30);  // chunks 3..4 (the last is 10 bytes, delivery is 50)
  EXPECT_FALSE(f.delivery->NeedsWindow(4));
  ASSERT_TRUE(f.delivery->OnLanding(7, 1, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->OnLanding(8, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->OnLanding(8, 1, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  EXPECT_TRUE(f.Digested().empty()) << "window 8 is complete but window 7 comes first";
  EXPECT_TRUE(f.writes.empty()) << "nothing may be digested before its window is complete";

  ASSERT_TRUE(f.delivery->OnLanding(7, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  EXPECT_TRUE(f.Digested().empty()) << "chunk 2 of window 7 is still missing";
  ASSERT_TRUE(f.delivery->OnLanding(7, 2, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  auto consumed = f.Digested();
  ASSERT_EQ(consumed.size(), 2u) << "both windows are consumed, digested and can be returned";
  EXPECT_EQ(consumed[0].tag, 7);
  EXPECT_EQ(consumed[1].tag, 8);
  ASSERT_EQ(f.writes.size(), 2u) << "one store write per window";
  EXPECT_EQ(f.writes.at(0).size(), 30u);
  EXPECT_EQ(f.writes.at(30).size(), 20u);
  EXPECT_TRUE(f.delivery->all_received());
  EXPECT_TRUE(f.delivery->all_consumed());
  auto expected = vocabulary::DigestOf(Rule::kCrc32c, std::span(f.memory.data(), 50));
  EXPECT_EQ(f.delivery->FinishDigest(), *expected);
}

// While a window is registered the sender can still change a chunk: between the digest's
// read and the store's copy, or (placed) in the retained memory after validation.
TEST(InboundDelivery, AWindowIsRevokedBeforeAnyOfItsBytesAreDigested) {
  fabric::NodeOptions options;
  options.provider.provider = "shm";
  auto node = fabric::FabricNode::Open(options);
  REQUIRE_OR_FAIL(node.ok(), "no provider to register memory with: " << node.status().ToString());
  Fixture f;
  auto region = (*node)->Register(f.memory.data(), 30, fabric::Access::kRemoteWrite);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  f.AddWindow(7, 30, std::move(region).value());  // chunks 0..2
  f.AddWindow(8, 30);                             // chunks 3..4

  ASSERT_TRUE(f.delivery->OnLanding(7, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->OnLanding(7, 1, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  EXPECT_TRUE(f.Digested().empty());
  EXPECT_TRUE(f.writes.empty()) << "a window is consumed whole, never chunk by chunk";

  f.memory[3] = 0xEE;  // the sender rewrites chunk 0 while its window is still granted
  ASSERT_TRUE(f.delivery->OnLanding(7, 2, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  auto consumed = f.Digested();
  ASSERT_EQ(consumed.size(), 1u);
  EXPECT_FALSE(consumed[0].region.open()) << "revoked as part of consuming it";
  EXPECT_EQ(f.writes.at(0).size(), 30u) << "handed to the store in one piece";

  ASSERT_TRUE(f.delivery->OnLanding(8, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->OnLanding(8, 1, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->Consume().ok());
  ASSERT_TRUE(f.delivery->all_consumed());
  f.Digested();
  auto expected = vocabulary::DigestOf(Rule::kCrc32c, std::span(f.memory.data(), 50));
  EXPECT_EQ(f.delivery->FinishDigest(), *expected) << "the digest covers the bytes as revoked";
}

TEST(InboundDelivery, DuplicateNotificationsCountOnce) {
  Fixture f;
  f.AddWindow(3, 100);
  ASSERT_TRUE(f.delivery->OnLanding(3, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(f.delivery->OnLanding(3, 0, Landing::kNotified, kNotifiedOnly).ok());
  EXPECT_EQ(f.delivery->received_chunks(), 1u);
}

TEST(InboundDelivery, RejectsAChunkOutsideItsWindowAndAWindowItDoesNotHold) {
  Fixture f;
  f.AddWindow(3, 20);
  EXPECT_EQ(f.delivery->OnLanding(3, 2, Landing::kNotified, kNotifiedOnly).code(),
            ErrorCode::kMalformed);
  EXPECT_EQ(f.delivery->OnLanding(4, 0, Landing::kNotified, kNotifiedOnly).code(),
            ErrorCode::kNotFound);
}

// Issue #14: a delivery's verdict follows its last chunk by one chunk's digest, whatever
// the rule. Measured structurally: chunks notified in order, windows granted as the
// connection grants them (at most 4 held, re-granted once digested, the digest keeping up).
// A window is read only once revoked, when its last chunk is notified; the chunks a
// notification hands to the digest must be no more than that chunk and those still to come,
// so the digest can finish them while the rest arrive, and the last notification hands over
// exactly one.
TEST(InboundDelivery, TheLastNotificationLeavesOneChunkToDigest) {
  constexpr uint64_t kChunk = 4, kChunks = 40, kWindowBytes = 4 * kChunk;
  std::vector<uint8_t> memory(kChunk * kChunks);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<uint8_t>(i * 7);
  std::map<uint64_t, std::vector<uint8_t>> writes;
  auto digests = DigestPool::Start(2).value();
  protocol::Announce a;
  a.delivery_id = "d";
  a.bytes = memory.size();
  a.chunk_size = kChunk;
  a.rule = Rule::kXxh3_128;
  InboundDelivery d(a, std::move(digests->Open(a.rule, a.bytes, nullptr)).value(),
                    std::make_unique<MemoryWriter>(writes));
  std::map<uint64_t, std::pair<uint16_t, uint32_t>> granted;  // first chunk -> tag, chunks
  uint16_t next_tag = 1;
  uint32_t largest = 0;
  for (uint64_t chunk = 0; chunk < kChunks; ++chunk) {
    while (d.NeedsWindow(4)) {
      LiveWindow w;
      w.tag = next_tag++;
      w.first_chunk = d.next_grant_chunk();
      w.chunk_count = d.ChunksToGrant(kWindowBytes);
      w.length = d.BytesForChunks(w.first_chunk, w.chunk_count);
      w.data = memory.data() + w.first_chunk * kChunk;
      granted[w.first_chunk] = {w.tag, w.chunk_count};
      largest = std::max(largest, w.chunk_count);
      d.AddWindow(std::move(w));
    }
    const auto window = std::prev(granted.upper_bound(chunk));  // the one holding `chunk`
    const auto in_window = static_cast<uint16_t>(chunk - window->first);
    ASSERT_TRUE(
        d.OnLanding(window->second.first, in_window, Landing::kNotified, kNotifiedOnly).ok());
    const size_t writes_before = writes.size();
    ASSERT_TRUE(d.Consume().ok());
    uint64_t handed = 0;
    for (auto it = std::next(writes.begin(), writes_before); it != writes.end(); ++it) {
      handed += it->second.size() / kChunk;
    }
    EXPECT_LE(handed, kChunks - chunk) << "chunk " << chunk << " made " << handed
                                       << " chunks readable, more than are still to come";
    if (chunk + 1 == kChunks) {
      EXPECT_EQ(handed, 1u) << "the last window is one chunk";
    }
    while (!d.all_digested()) std::this_thread::yield();
    (void)d.TakeDigested();
  }
  EXPECT_EQ(largest, 4u) << "windows are full until the tail";
  EXPECT_EQ(granted.size(), 12u) << "nine windows of 4 chunks, then 2, 1, 1";
  ASSERT_TRUE(d.all_consumed());
  EXPECT_EQ(d.FinishDigest(), *vocabulary::DigestOf(a.rule, memory));
}

TEST(WindowPool, HandsOutEachWindowOnceAndWakesWaiters) {
  auto pool = WindowPool::Create(3 * 4096, 4096);
  ASSERT_TRUE(pool.ok());
  auto inbox = Inbox::Create();
  ASSERT_TRUE(inbox.ok());
  std::vector<WindowPool::Window> got;
  for (int i = 0; i < 3; ++i) got.push_back(*(*pool)->TryAcquire((*inbox)->event_fd()));
  EXPECT_NE(got[0].data, got[1].data);
  EXPECT_FALSE((*pool)->TryAcquire((*inbox)->event_fd()).has_value());
  (*pool)->Release(got[1].index, 4096);
  uint64_t counter = 0;
  EXPECT_EQ(read((*inbox)->event_fd(), &counter, sizeof counter), 8) << "waiter was signalled";
  EXPECT_TRUE((*pool)->TryAcquire((*inbox)->event_fd()).has_value());
  EXPECT_FALSE(WindowPool::Create(4096, 8192).ok());
}

TEST(WindowPool, ADeliveryHoldingNoWindowGoesBeforeOneThatHoldsSome) {
  auto pool = WindowPool::Create(2 * 4096, 4096);
  ASSERT_TRUE(pool.ok());
  auto big = Inbox::Create();
  auto waiting = Inbox::Create();
  ASSERT_TRUE(big.ok() && waiting.ok());
  const int big_fd = (*big)->event_fd();
  const int waiting_fd = (*waiting)->event_fd();
  auto first = (*pool)->TryAcquire(big_fd, false);
  auto second = (*pool)->TryAcquire(big_fd, true);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE((*pool)->TryAcquire(waiting_fd, false).has_value());
  // The big delivery consumes a window and at once asks again: the one that holds none
  // and waits gets it.
  (*pool)->Release(first->index, 0);
  EXPECT_FALSE((*pool)->TryAcquire(big_fd, true).has_value());
  EXPECT_TRUE((*pool)->TryAcquire(waiting_fd, false).has_value());
  // With nobody starving, a holder gets a free window again.
  (*pool)->Release(second->index, 0);
  EXPECT_TRUE((*pool)->TryAcquire(big_fd, true).has_value());
}

TEST(NotificationRouter, RoutesByTagAndCountsStrays) {
  NotificationRouter router;
  auto inbox = Inbox::Create();
  ASSERT_TRUE(inbox.ok());
  const fabric::Peer writer{3, 7};
  auto tag = router.Bind(*inbox, writer);
  ASSERT_TRUE(tag.has_value());
  router.Route(writer, NotificationValue(*tag, 5));
  router.Route(writer, NotificationValue(static_cast<uint16_t>(*tag + 1), 0));
  std::vector<uint32_t> values;
  (*inbox)->Drain(values);
  EXPECT_EQ(values, (std::vector<uint32_t>{NotificationValue(*tag, 5)}));
  EXPECT_EQ(router.unrouted(), 1u);
  router.Unbind(*tag);
  router.Route(writer, NotificationValue(*tag, 1));
  EXPECT_EQ(router.unrouted(), 2u) << "a revoked window's tag routes nowhere";
}

// Issue #31: a tag counts only for the writer it was granted to; another endpoint or
// another address on the same endpoint naming it is a forgery, routed nowhere.
TEST(NotificationRouter, ATagNamedByAnotherWriterRoutesNowhere) {
  NotificationRouter router;
  auto inbox = Inbox::Create();
  ASSERT_TRUE(inbox.ok());
  const fabric::Peer victim{3, 7};
  auto tag = router.Bind(*inbox, victim);
  ASSERT_TRUE(tag.has_value());
  router.Route(fabric::Peer{4, 7}, NotificationValue(*tag, 0));       // other endpoint (MSG)
  router.Route(fabric::Peer{3, 8}, NotificationValue(*tag, 0xffff));  // other address (RDM)
  std::vector<uint32_t> values;
  (*inbox)->Drain(values);
  EXPECT_TRUE(values.empty()) << "a forged notification reached the victim's inbox";
  EXPECT_EQ(router.forged(), 2u);
  router.Route(victim, NotificationValue(*tag, 0));
  (*inbox)->Drain(values);
  EXPECT_EQ(values, (std::vector<uint32_t>{NotificationValue(*tag, 0)}));
}

// A record without a writer's address (a provider asked for no FI_SOURCE, as rxm is) is
// judged by its endpoint alone. libfabric spells "not available" as it spells "unspecified"
// (both are all ones), so a FI_SOURCE provider's unknown writer is judged the same way:
// the open gap docs/security.md names.
TEST(NotificationRouter, ARecordWithoutAWriterAddressIsJudgedByItsEndpoint) {
  static_assert(FI_ADDR_NOTAVAIL == FI_ADDR_UNSPEC);
  NotificationRouter router;
  auto inbox = Inbox::Create();
  ASSERT_TRUE(inbox.ok());
  auto tag = router.Bind(*inbox, fabric::Peer{3, 7});
  ASSERT_TRUE(tag.has_value());
  router.Route(fabric::Peer{3, FI_ADDR_UNSPEC}, NotificationValue(*tag, 1));
  router.Route(fabric::Peer{4, FI_ADDR_UNSPEC}, NotificationValue(*tag, 2));
  std::vector<uint32_t> values;
  (*inbox)->Drain(values);
  EXPECT_EQ(values, (std::vector<uint32_t>{NotificationValue(*tag, 1)}));
  EXPECT_EQ(router.forged(), 1u);
}

// Tags are drawn at random: one connection's tags say nothing about another's.
TEST(NotificationRouter, TagsAreNotHandedOutInSequence) {
  NotificationRouter router;
  auto inbox = Inbox::Create();
  ASSERT_TRUE(inbox.ok());
  std::vector<uint16_t> tags;
  for (int i = 0; i < 8; ++i) {
    auto tag = router.Bind(*inbox, fabric::Peer{0, 0});
    ASSERT_TRUE(tag.has_value());
    tags.push_back(*tag);
  }
  int sequential = 0;
  for (size_t i = 1; i < tags.size(); ++i) sequential += tags[i] == tags[i - 1] + 1 ? 1 : 0;
  EXPECT_LT(sequential, 7) << "tags 1, 2, 3, ...: the next connection's tag is guessable";
}

}  // namespace
}  // namespace writ::receiver
