// The window pool hands a window back cleared over everything a grant exposed: a sender
// that notifies chunks without writing them must find zeros, never another delivery.
#include "receiver/window_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace writ::receiver {
namespace {

constexpr uint64_t kWindow = 64 << 10;

TEST(WindowPool, AReleasedWindowIsClearedOverWhatWasExposed) {
  auto pool = WindowPool::Create(kWindow, kWindow);  // one window: the next grant reuses it
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  auto first = (*pool)->TryAcquire(-1);
  ASSERT_TRUE(first.has_value());
  std::memset(first->data, 0xA5, kWindow);  // a delivery's bytes
  (*pool)->Release(first->index, kWindow);
  auto second = (*pool)->TryAcquire(-1);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->data, first->data) << "the test wants the same window again";
  EXPECT_TRUE(std::all_of(second->data, second->data + kWindow, [](uint8_t b) { return b == 0; }))
      << "the next grant of this window would show the last delivery's bytes";
}

TEST(WindowPool, OnlyTheExposedPartIsCleared) {
  auto pool = WindowPool::Create(kWindow, kWindow);
  ASSERT_TRUE(pool.ok());
  auto window = (*pool)->TryAcquire(-1);
  ASSERT_TRUE(window.has_value());
  std::memset(window->data, 0x5A, 4096);
  (*pool)->Release(window->index, 4096);
  auto again = (*pool)->TryAcquire(-1);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(std::all_of(again->data, again->data + 4096, [](uint8_t b) { return b == 0; }));
}

}  // namespace
}  // namespace writ::receiver
