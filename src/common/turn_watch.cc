#include "common/turn_watch.h"

#include <algorithm>

#include "common/thread.h"

namespace writ {
namespace {

constexpr std::chrono::milliseconds kLookEvery{1000};

}  // namespace

Status TurnWatch::Start(const std::string& what,
                        std::function<void(std::chrono::milliseconds)> on_stuck) {
  on_stuck_ = std::move(on_stuck);
  return StartThread(thread_, what, [this] { Watch(); });
}

void TurnWatch::AtLeast(std::chrono::milliseconds limit) {
  const int64_t want = std::max(limit, kMinLimit).count();
  int64_t now = limit_ms_.load(std::memory_order_relaxed);
  while (now < want && !limit_ms_.compare_exchange_weak(now, want, std::memory_order_relaxed)) {
  }
}

std::chrono::milliseconds TurnWatch::limit() const {
  return std::chrono::milliseconds(limit_ms_.load(std::memory_order_relaxed));
}

void TurnWatch::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TurnWatch::Watch() {
  uint64_t seen = turns_.load(std::memory_order_relaxed);
  Clock::time_point since = Clock::now();
  std::chrono::milliseconds stuck{0};
  {
    MutexLock lock(mu_);
    for (;;) {
      const auto period = std::min(kLookEvery, limit() / 4);
      if (lock.WaitFor(wake_, period, [this]() REQUIRES(mu_) { return stop_; })) return;
      const uint64_t turns = turns_.load(std::memory_order_relaxed);
      const Clock::time_point now = Clock::now();
      if (turns != seen || turns % 2 == 0) {  // a turn ended since the last look, or none is on
        seen = turns;
        since = now;
        continue;
      }
      stuck = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
      if (stuck >= limit()) break;
    }
  }
  on_stuck_(stuck);
}

}  // namespace writ
