// TurnWatch: a watchdog for a thread that loops calling into the provider (the sender
// session's thread, the receiver's progress thread). The loop marks the start and the end
// of each turn (two relaxed increments); the watch's own thread looks once a second and,
// when one turn has lasted longer than its limit, calls `on_stuck` once.
//
// Why: a call into the provider can fail to return. libfabric 1.17's shm provider takes a
// spin lock that lives in the region the two processes share; when the peer is killed
// holding it, the next write (sender) or progress call (receiver) spins for ever, and
// nothing the looping thread itself checks (stall timeouts) ever runs again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "writ/status.h"

namespace writ {

class TurnWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // No limit below this: an idle loop may wait up to half a second a turn, and a control
  // message may take seconds to arrive whole.
  static constexpr std::chrono::milliseconds kMinLimit{5000};

  TurnWatch() = default;
  ~TurnWatch() { Stop(); }
  TurnWatch(const TurnWatch&) = delete;
  TurnWatch& operator=(const TurnWatch&) = delete;

  // Starts the watch's thread (`what` names it in an error); `on_stuck(how_long)` runs on
  // it, at most once.
  [[nodiscard]] Status Start(const std::string& what,
                             std::function<void(std::chrono::milliseconds)> on_stuck);
  // The watched thread, around each turn.
  void TurnBegins() { turns_.fetch_add(1, std::memory_order_relaxed); }
  void TurnEnds() { turns_.fetch_add(1, std::memory_order_relaxed); }
  // Raises the limit to `limit` (never lowers it; never below kMinLimit). Any thread.
  void AtLeast(std::chrono::milliseconds limit);
  std::chrono::milliseconds limit() const;
  // Stops and joins the watch's thread (not from `on_stuck`).
  void Stop();

 private:
  void Watch();

  std::atomic<uint64_t> turns_{0};  // odd while a turn is under way
  std::atomic<int64_t> limit_ms_{kMinLimit.count()};
  std::function<void(std::chrono::milliseconds)> on_stuck_;
  Mutex mu_;
  std::condition_variable wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace writ
