// The receiver's digest workers: every rule's digest equals the one-pass digest whatever
// the ranges and the number of workers, and a cancelled stream never reads a window
// again, so a window can go back to the pool and on to another delivery.
#include "receiver/digest_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "random_bytes.h"
#include "receiver/inbound_delivery.h"
#include "receiver/window_pool.h"
#include "writ/vocabulary.h"

namespace writ::receiver {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr Rule kRules[] = {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256, Rule::kXxh3_128Tree1MiB,
                           Rule::kSha256Tree1MiB};

void WaitIdle(DigestStream& stream) {
  while (!stream.idle()) std::this_thread::yield();
}

// Holds the pool's only worker until Open() is called, so jobs stay queued.
class Gate {
 public:
  explicit Gate(DigestPool& pool) {
    pool.Post([f = open_.get_future().share()] { f.wait(); });
  }
  void Open() { open_.set_value(); }

 private:
  std::promise<void> open_;
};

// Returns once every task posted before it has run (one worker: in order).
void Drain(DigestPool& pool) {
  std::promise<void> done;
  pool.Post([&done] { done.set_value(); });
  done.get_future().wait();
}

TEST(DigestPool, EveryRuleEqualsTheOnePassDigestWhateverTheRangesAndWorkers) {
  const std::vector<uint8_t> data = writ::testing::RandomBytes(9, 5 * kMiB + 4099);
  // Windows of these sizes, in order: leaf-aligned, straddling leaves, smaller than a leaf.
  const uint64_t windows[] = {kMiB, 3 * kMiB + 7, 100, kMiB / 2, 2 * kMiB};
  for (uint32_t threads : {1u, 4u}) {
    auto pool = DigestPool::Start(threads);
    ASSERT_TRUE(pool.ok());
    for (Rule rule : kRules) {
      SCOPED_TRACE(std::string(RuleName(rule)) + ", workers " + std::to_string(threads));
      for (uint64_t size : {uint64_t{0}, uint64_t{1}, kMiB - 1, kMiB, kMiB + 1, data.size()}) {
        auto stream = (*pool)->Open(rule, size, nullptr);
        ASSERT_TRUE(stream.ok());
        uint64_t token = 0;
        for (uint64_t at = 0, w = 0; at < size; ++w) {
          const uint64_t n = std::min(windows[w % std::size(windows)], size - at);
          (*stream)->Submit(token++, at, std::span(data).subspan(at, n));
          at += n;
        }
        WaitIdle(**stream);
        EXPECT_EQ((*stream)->TakeDone().size(), token) << "every range reported digested";
        EXPECT_EQ((*stream)->Finish(), *vocabulary::DigestOf(rule, std::span(data).first(size)))
            << size << " bytes";
      }
    }
  }
}

TEST(DigestPool, DeliveriesDigestSideBySide) {
  const std::vector<uint8_t> data = writ::testing::RandomBytes(10, 4 * kMiB);
  auto pool = DigestPool::Start(4);
  ASSERT_TRUE(pool.ok());
  std::vector<std::shared_ptr<DigestStream>> streams;
  for (Rule rule : kRules) streams.push_back((*pool)->Open(rule, data.size(), nullptr).value());
  for (uint64_t at = 0; at < data.size(); at += kMiB / 4) {
    for (auto& s : streams) s->Submit(at, at, std::span(data).subspan(at, kMiB / 4));
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    WaitIdle(*streams[i]);
    EXPECT_EQ(streams[i]->Finish(), *vocabulary::DigestOf(kRules[i], data)) << RuleName(kRules[i]);
  }
}

// Issue 26: a small delivery runs to completion on the connection's thread. Its ring copy
// is digested by Submit itself, reported at once, and nobody is woken; a larger copy, or a
// window of the same size, still goes to the pool.
TEST(DigestPool, ASmallRangeNextInOrderIsDigestedBySubmitWithoutAWake) {
  const std::vector<uint8_t> data =
      writ::testing::RandomBytes(11, 2 * DigestStream::kInlineDigestBytes);
  auto pool = DigestPool::Start(1);
  ASSERT_TRUE(pool.ok());
  Gate gate(**pool);  // the pool's only worker is held: nothing it was given can finish
  std::atomic<int> wakes = 0;
  const auto small = std::span(data).first(4096);
  auto stream = (*pool)->Open(Rule::kXxh3_128, small.size(), [&wakes] { ++wakes; }).value();
  stream->Submit(7, 0, small, DigestStream::Where::kHereIfSmall);
  EXPECT_EQ(stream->TakeDone(), std::vector<uint64_t>{7}) << "done when Submit returns";
  EXPECT_EQ(wakes.load(), 0) << "the connection's own thread needs no wake-up";
  EXPECT_EQ(stream->Finish(), *vocabulary::DigestOf(Rule::kXxh3_128, small));

  const auto large = std::span(data).first(DigestStream::kInlineDigestBytes + 1);
  auto queued = (*pool)->Open(Rule::kXxh3_128, large.size(), [&wakes] { ++wakes; }).value();
  queued->Submit(1, 0, large, DigestStream::Where::kHereIfSmall);
  EXPECT_TRUE(queued->TakeDone().empty()) << "a range over the limit waits for the pool";
  auto window = (*pool)->Open(Rule::kXxh3_128, small.size(), [&wakes] { ++wakes; }).value();
  window->Submit(2, 0, small);
  EXPECT_TRUE(window->TakeDone().empty()) << "a small window is digested on the pool";
  gate.Open();
  Drain(**pool);  // the job, its wake-up included, ran before this (one worker, in order)
  EXPECT_EQ(queued->TakeDone(), std::vector<uint64_t>{1});
  EXPECT_EQ(window->TakeDone(), std::vector<uint64_t>{2});
  EXPECT_EQ(wakes.load(), 2) << "the pool wakes the connection for each";
  EXPECT_EQ(queued->Finish(), *vocabulary::DigestOf(Rule::kXxh3_128, large));
}

// The security issue's rule: once a delivery is abandoned its window goes back to the pool
// and may be handed to another delivery. A job queued for it must never read it then.
TEST(DigestPool, AJobQueuedForAnAbandonedDeliveryNeverReadsItsReusedWindow) {
  auto windows = WindowPool::Create(2 * kMiB, kMiB);
  ASSERT_TRUE(windows.ok());
  auto pool = DigestPool::Start(1);
  ASSERT_TRUE(pool.ok());
  for (Rule rule : {Rule::kSha256, Rule::kSha256Tree1MiB}) {
    Gate gate(**pool);
    auto window = (*windows)->TryAcquire(-1, false, /*owner=*/1);
    ASSERT_TRUE(window.has_value());
    std::fill_n(window->data, kMiB, 0xAA);
    auto stream = (*pool)->Open(rule, 4 * kMiB, nullptr).value();
    stream->Submit(0, 0, std::span<const uint8_t>(window->data, kMiB));  // queued behind the gate

    stream->Cancel();  // the delivery is abandoned; nothing is reading, so this returns now
    (*windows)->Release(window->index, kMiB);
    auto reused = (*windows)->TryAcquire(-1, false, /*owner=*/2);
    ASSERT_TRUE(reused.has_value());
    ASSERT_EQ(reused->data, window->data) << "the same window, now another delivery's";
    std::fill_n(reused->data, kMiB, 0x5E);  // the next delivery's bytes

    gate.Open();
    Drain(**pool);
    EXPECT_EQ(stream->reads_started(), 0u) << RuleName(rule) << ": a cancelled job read a window";
    EXPECT_TRUE(stream->TakeDone().empty());
    EXPECT_TRUE(stream->Finish().empty()) << "a cancelled digest equals no digest";
    (*windows)->Release(reused->index, kMiB);
  }
}

// A job already reading when the delivery is abandoned: Cancel waits for it, and nothing
// queued after it starts.
TEST(DigestPool, CancelWaitsForTheReadInProgressAndStartsNoOther) {
  auto pool = DigestPool::Start(1);
  ASSERT_TRUE(pool.ok());
  for (Rule rule : {Rule::kSha256, Rule::kSha256Tree1MiB}) {
    auto buffer = std::make_unique<std::vector<uint8_t>>(16 * kMiB, 0x11);
    auto stream = (*pool)->Open(rule, 32 * kMiB, nullptr).value();
    stream->Submit(0, 0, *buffer);
    while (stream->reads_started() == 0) std::this_thread::yield();
    stream->Cancel();
    EXPECT_EQ(stream->reads_finished(), stream->reads_started())
        << RuleName(rule) << ": Cancel returned while a job was reading";
    const uint64_t started = stream->reads_started();
    buffer.reset();  // the window is gone (ASan would see a read after this)
    Drain(**pool);
    EXPECT_EQ(stream->reads_started(), started) << "a read began after Cancel";
  }
}

class NoWriter : public store::PayloadWriter {
 public:
  Status Write(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status Read(uint64_t, std::span<uint8_t>) override { return Status::Ok(); }
  void SetDigest(std::vector<uint8_t>) override {}
  Result<store::RetentionEvidence> Commit(const std::vector<std::string>&) override {
    return store::RetentionEvidence{};
  }
};

// The same through InboundDelivery: a window consumed but not yet digested goes back to the
// pool (its lease ending with the delivery) only after the digest is cancelled.
TEST(DigestPool, AnAbandonedDeliveryGivesBackItsWindowsOnlyOnceNoJobCanReadThem) {
  auto windows = WindowPool::Create(2 * kMiB, kMiB);
  ASSERT_TRUE(windows.ok());
  auto pool = DigestPool::Start(1);
  ASSERT_TRUE(pool.ok());
  Gate gate(**pool);
  protocol::Announce a;
  a.delivery_id = "abandoned";
  a.bytes = 2 * kMiB;
  a.chunk_size = kMiB;
  a.rule = Rule::kSha256Tree1MiB;
  auto stream = (*pool)->Open(a.rule, a.bytes, nullptr).value();
  auto delivery = std::make_unique<InboundDelivery>(a, stream, std::make_unique<NoWriter>());
  for (int i = 0; i < 2; ++i) {
    auto window = (*windows)->TryAcquire(-1, i > 0, /*owner=*/1);
    ASSERT_TRUE(window.has_value());
    LiveWindow live;
    live.tag = static_cast<uint16_t>(i + 1);
    live.pool = PoolLease(**windows, window->index);
    live.pool.Expose(kMiB);
    live.data = window->data;
    live.first_chunk = delivery->next_grant_chunk();
    live.chunk_count = delivery->ChunksForWindow(kMiB);
    live.length = delivery->BytesForChunks(live.first_chunk, live.chunk_count);
    delivery->AddWindow(std::move(live));
  }
  ASSERT_TRUE(delivery->OnLanding(1, 0, Landing::kNotified, kNotifiedOnly).ok());
  ASSERT_TRUE(delivery->Consume().ok());  // window 1 goes to the workers (queued)
  EXPECT_TRUE(delivery->TakeDigested().empty());
  EXPECT_FALSE(delivery->all_digested());

  EXPECT_EQ((*windows)->in_use(), 2u) << "the live window and the one being digested";
  delivery.reset();
  EXPECT_EQ((*windows)->in_use(), 0u) << "both given back as the delivery ended";
  for (int i = 0; i < 2; ++i) {
    auto next = (*windows)->TryAcquire(-1, i > 0, /*owner=*/2);
    ASSERT_TRUE(next.has_value());
    std::fill_n(next->data, kMiB, 0x5E);
  }
  gate.Open();
  Drain(**pool);
  EXPECT_EQ(stream->reads_started(), 0u) << "a job read a window another delivery now holds";
}

}  // namespace
}  // namespace writ::receiver
