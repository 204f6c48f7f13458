// Deliveries into a receiver application's exposed buffer over a real provider (tcp): an
// embedded receiver, a sender session with many blocks in flight at once, and a
// scatter-gather delivery into the same buffer (issue 32). The bytes are read back from the
// application's buffer itself.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "random_bytes.h"
#include "requirement.h"
#include "writ/receiver.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kTcpBlock = 256 << 10;

TEST(ExposedTargetTcp, BlocksInFlightAndAScatterGatherDeliveryLandInTheApplicationsBuffer) {
  REQUIRE_OR_FAIL(testing::ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  testing::TempDir dir;
  ReceiverOptions ro;
  ro.provider = "tcp";
  ro.identity_dir = dir.File("receiver");
  auto receiver = Receiver::Start(ro);
  ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();

  std::vector<uint8_t> kv(16 * kTcpBlock, 0);
  std::mutex mu;
  std::condition_variable changed;
  std::vector<TargetDelivery> told;
  ExposeOptions eo;
  eo.pages = PageGeometry{kTcpBlock, 16};
  eo.on_delivery = [&](const TargetDelivery& t) {
    std::lock_guard<std::mutex> lock(mu);
    told.push_back(t);
    changed.notify_all();
  };
  ASSERT_TRUE((*receiver)->Expose("kv", kv, eo).ok());

  SessionOptions so;
  so.to = (*receiver)->listen_address();
  auto sender = Sender::Connect(so);
  ASSERT_TRUE(sender.ok()) << sender.status().ToString();
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<DeliveryHandle> handles;
  for (uint64_t page = 0; page < 8; ++page) {
    blocks.push_back(testing::RandomBytes(100 + page, kTcpBlock));
    DeliveryOptions d;
    d.id = "page-" + std::to_string(page * 2);
    d.chunk_size = 64 << 10;
    d.target = "kv";
    d.target_offset = page * 2 * kTcpBlock;  // every other page
    handles.push_back((*sender)->SubmitBytes(blocks.back(), d));
  }
  for (const DeliveryHandle& h : handles) {
    ASSERT_TRUE(h.Wait().status.ok()) << h.Wait().status.ToString();
    EXPECT_EQ(h.Wait().reached_retention, RetentionClass::kVolatile);
  }
  const std::vector<uint8_t> a = testing::RandomBytes(7, kTcpBlock);
  const std::vector<uint8_t> b = testing::RandomBytes(8, kTcpBlock);
  const std::vector<Region> regions = {{a.data(), a.size()}, {b.data(), b.size()}};
  DeliveryOptions gather;
  gather.id = "pages-1-2";
  gather.target = "kv";
  gather.target_offset = kTcpBlock;  // pages 1 and 2: between two blocks above
  gather.until = Rung::kValidated;
  // Page 2 was block "page-2"'s: that delivery ended, so the range is free again.
  const DeliveryOutcome out = (*sender)->SendRegions(regions, gather);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();

  for (uint64_t page = 0; page < 8; ++page) {
    if (page == 1) continue;  // page 2, overwritten by the scatter-gather delivery
    EXPECT_TRUE(
        std::equal(blocks[page].begin(), blocks[page].end(), kv.begin() + page * 2 * kTcpBlock))
        << "page " << page * 2;
  }
  EXPECT_TRUE(std::equal(a.begin(), a.end(), kv.begin() + kTcpBlock));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), kv.begin() + 2 * kTcpBlock));
  EXPECT_TRUE(std::all_of(kv.begin() + 3 * kTcpBlock, kv.begin() + 4 * kTcpBlock, [](uint8_t x) {
    return x == 0;
  })) << "page 3 was never a target";

  std::unique_lock<std::mutex> lock(mu);
  changed.wait_for(lock, 5s, [&] { return told.size() >= 9; });
  ASSERT_EQ(told.size(), 9u);
  for (const TargetDelivery& t : told) EXPECT_TRUE(t.ok) << t.delivery_id << ": " << t.why;
  EXPECT_TRUE((*sender)->Close().ok());
  EXPECT_TRUE((*receiver)->Revoke("kv").ok());
  EXPECT_TRUE((*receiver)->Stop().ok());
}

// Page lists over tcp: blocks of two scattered pages each, all in flight at once, and a
// scatter-gather delivery (its region table and its page list together) into two more.
TEST(ExposedTargetTcp, PageListsInFlightLandInTheirPages) {
  REQUIRE_OR_FAIL(testing::ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  testing::TempDir dir;
  std::vector<uint8_t> kv(32 * kTcpBlock, 0);  // outlives the receiver
  std::mutex mu;
  std::condition_variable changed;
  std::vector<TargetDelivery> told;
  ReceiverOptions ro;
  ro.provider = "tcp";
  ro.identity_dir = dir.File("receiver");
  auto receiver = Receiver::Start(ro);
  ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
  ExposeOptions eo;
  eo.pages = PageGeometry{kTcpBlock, 32};
  eo.on_delivery = [&](const TargetDelivery& t) {
    std::lock_guard<std::mutex> lock(mu);
    told.push_back(t);
    changed.notify_all();
  };
  ASSERT_TRUE((*receiver)->Expose("kv", kv, eo).ok());
  SessionOptions so;
  so.to = (*receiver)->listen_address();
  auto sender = Sender::Connect(so);
  ASSERT_TRUE(sender.ok()) << sender.status().ToString();

  std::vector<std::vector<uint64_t>> pages;
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<DeliveryHandle> handles;
  for (uint64_t b = 0; b < 8; ++b) pages.push_back({31 - b, b * 2});  // 31 and 0, 30 and 2, ...
  for (uint64_t b = 0; b < 8; ++b) {
    blocks.push_back(testing::RandomBytes(200 + b, 2 * kTcpBlock));
    DeliveryOptions d;
    d.id = "block-" + std::to_string(b);
    d.chunk_size = 64 << 10;
    d.target = "kv";
    d.target_pages = pages[b];
    handles.push_back((*sender)->SubmitBytes(blocks.back(), d));
  }
  for (const DeliveryHandle& h : handles) {
    ASSERT_TRUE(h.Wait().status.ok()) << h.Wait().status.ToString();
  }
  const std::vector<uint8_t> a = testing::RandomBytes(9, kTcpBlock);
  const std::vector<uint8_t> c = testing::RandomBytes(10, kTcpBlock);
  const std::vector<Region> regions = {{a.data(), a.size()}, {c.data(), c.size()}};
  DeliveryOptions gather;
  gather.id = "gathered";
  gather.target = "kv";
  gather.target_pages = {21, 19};
  const DeliveryOutcome out = (*sender)->SendRegions(regions, gather);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();

  for (uint64_t b = 0; b < 8; ++b) {
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(std::equal(blocks[b].begin() + i * kTcpBlock,
                             blocks[b].begin() + (i + 1) * kTcpBlock,
                             kv.begin() + pages[b][i] * kTcpBlock))
          << "block " << b << " page " << pages[b][i];
    }
  }
  EXPECT_TRUE(std::equal(a.begin(), a.end(), kv.begin() + 21 * kTcpBlock));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), kv.begin() + 19 * kTcpBlock));
  EXPECT_TRUE(std::all_of(kv.begin() + 20 * kTcpBlock, kv.begin() + 21 * kTcpBlock, [](uint8_t x) {
    return x == 0;
  })) << "page 20 was never listed";
  {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait_for(lock, 5s, [&] { return told.size() >= 9; });
    ASSERT_EQ(told.size(), 9u);
    for (const TargetDelivery& t : told) EXPECT_TRUE(t.ok) << t.delivery_id << ": " << t.why;
  }
  EXPECT_TRUE((*sender)->Close().ok());
  EXPECT_TRUE((*receiver)->Revoke("kv").ok());
  EXPECT_TRUE((*receiver)->Stop().ok());
}

}  // namespace
}  // namespace writ
