// StandingRing::Release over the in-memory fabric: what a delivery left in its ring slot is
// cleared before the slot goes back, the delivery's announced bytes (not the whole 64 KiB
// slot), and the whole slot when bytes landed that no delivery claimed.
#include "receiver/standing_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "fabric/memory_fabric.h"

namespace writ::receiver {
namespace {

constexpr uint64_t kRingSlotBytes = 64 << 10;

class StandingRingRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::move(fabric_.Open(fabric::NodeOptions{})).value();
    auto inbox = Inbox::Create();
    ASSERT_TRUE(inbox.ok());
    auto ring = StandingRing::Open(*node_, router_, *inbox, fabric::Peer{}, budget_, 1ull << 30, 2,
                                   kRingSlotBytes);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    ring_ = std::move(ring).value();
  }
  // The slot's memory (the memory fabric's descriptor base is its address), as a sender's
  // write leaves it: `bytes` of 0xAB.
  uint8_t* Slot(uint32_t slot) {
    return reinterpret_cast<uint8_t*>(ring_->Describe().remote_address) + slot * kRingSlotBytes;
  }
  void Write(uint32_t slot, uint64_t bytes) { std::fill(Slot(slot), Slot(slot) + bytes, 0xAB); }
  uint64_t ZeroBytes(uint32_t slot) {
    return static_cast<uint64_t>(std::count(Slot(slot), Slot(slot) + kRingSlotBytes, 0));
  }

  fabric::MemoryFabric fabric_;
  std::unique_ptr<fabric::FabricPort> node_;
  NotificationRouter router_;
  std::atomic<uint64_t> budget_{0};
  std::unique_ptr<StandingRing> ring_;
};

TEST_F(StandingRingRelease, AConsumedDeliveryClearsItsAnnouncedBytes) {
  Write(0, 4096);
  EXPECT_FALSE(ring_->OnNotification(0).has_value()) << "landed before its deliver";
  EXPECT_TRUE(ring_->Claim(0, "small", 4096));
  EXPECT_EQ(ring_->Copy(0, 4096), std::vector<uint8_t>(4096, 0xAB));
  ring_->Release(0);
  EXPECT_EQ(ZeroBytes(0), kRingSlotBytes) << "nothing of it is left for the next delivery";
  EXPECT_EQ(ring_->TakeFreed(), std::vector<uint32_t>{0});
}

TEST_F(StandingRingRelease, ASenderWritingPastItsAnnounceLeavesOnlyItsOwnBytes) {
  // This connection's sender wrote 8 KiB for a delivery it announced as 4 KiB: the ring is
  // its alone, so the 4 KiB past the announce are its own, and they are not cleared.
  Write(1, 8192);
  EXPECT_FALSE(ring_->Claim(1, "short", 4096));
  EXPECT_EQ(ring_->OnNotification(1), std::optional<std::string>("short"));
  ring_->Release(1);
  EXPECT_EQ(ZeroBytes(1), kRingSlotBytes - 4096);
  EXPECT_TRUE(std::all_of(Slot(1), Slot(1) + 4096, [](uint8_t b) { return b == 0; }));
}

TEST_F(StandingRingRelease, BytesThatLandedWithNoDeliveryClearTheWholeSlot) {
  Write(0, kRingSlotBytes);
  EXPECT_FALSE(ring_->OnNotification(0).has_value());
  ring_->Expire(StandingRing::Clock::now() + std::chrono::hours(1), std::chrono::milliseconds(1));
  EXPECT_EQ(ZeroBytes(0), kRingSlotBytes);
}

TEST_F(StandingRingRelease, AnAbandonedDeliverysLateWriteIsCleared) {
  EXPECT_FALSE(ring_->Claim(0, "refused", 16384));
  ring_->Abandon(0);
  Write(0, 16384);
  EXPECT_FALSE(ring_->OnNotification(0).has_value()) << "no delivery to consume it";
  EXPECT_EQ(ZeroBytes(0), kRingSlotBytes);
  EXPECT_EQ(ring_->TakeFreed(), std::vector<uint32_t>{0});
}

}  // namespace
}  // namespace writ::receiver
