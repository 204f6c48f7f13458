// The window pool hands a window back cleared over everything a grant exposed: a sender
// that notifies chunks without writing them must find zeros, never another delivery.
#include "receiver/window_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace writ::receiver {
namespace {

constexpr uint64_t kWindow = 64 << 10;

TEST(WindowPool, AWindowIsClearedOverWhatWasExposedBeforeAnotherDeliveryGetsIt) {
  auto pool = WindowPool::Create(kWindow, kWindow);  // one window: the next grant reuses it
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  auto first = (*pool)->TryAcquire(-1, false, /*owner=*/1);
  ASSERT_TRUE(first.has_value());
  std::memset(first->data, 0xA5, kWindow);  // delivery 1's bytes
  (*pool)->Release(first->index, kWindow);
  auto second = (*pool)->TryAcquire(-1, false, /*owner=*/2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->data, first->data) << "the test wants the same window again";
  EXPECT_TRUE(std::all_of(second->data, second->data + kWindow, [](uint8_t b) { return b == 0; }))
      << "delivery 2 would be granted delivery 1's bytes";
}

// A delivery streaming through the pool gets its own window back as it left it: the bytes
// are its own, and a 32 MiB clear per window would sit on its path.
TEST(WindowPool, TheSameDeliveryGetsItsWindowBackWithoutAClear) {
  auto pool = WindowPool::Create(kWindow, kWindow);
  ASSERT_TRUE(pool.ok());
  auto window = (*pool)->TryAcquire(-1, false, 7);
  ASSERT_TRUE(window.has_value());
  std::memset(window->data, 0x5A, 4096);
  (*pool)->Release(window->index, 4096);
  auto again = (*pool)->TryAcquire(-1, false, 7);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->data[0], 0x5A);
  (*pool)->Release(again->index, 4096);
  auto other = (*pool)->TryAcquire(-1);  // no owner: always cleared
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(std::all_of(other->data, other->data + 4096, [](uint8_t b) { return b == 0; }));
}

}  // namespace
}  // namespace writ::receiver
