// The receiver's window pool: one mapping of --window-pool bytes cut into
// fixed windows. Memory for windows is bounded by it, whatever the deliveries.
//
// A window is cleared before it is handed to another delivery, over every byte grants
// exposed: a sender can notify a chunk without writing it (tcp reports no length for a
// remote write), so what a window held for one delivery must never be there for another
// to digest. A delivery that streams through the pool gets its own slots back uncleared:
// what they hold is its own bytes, and clearing 32 MiB per window would be on its path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "writ/status.h"

namespace writ::receiver {

class WindowPool {
 public:
  struct Window {
    uint32_t index;
    uint8_t* data;
  };

  static Result<std::unique_ptr<WindowPool>> Create(uint64_t pool_bytes, uint64_t window_bytes);
  ~WindowPool();
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // A free window, or nothing; then `waiter_eventfd` is signalled at every release until
  // it acquires one or is forgotten. Fair to deliveries that hold none: while one of them
  // waits, a caller that `holds_windows` already gets nothing, so a large delivery that
  // re-grants as it consumes cannot keep the pool from a waiting one (which would then be
  // refused "no window available" at its window-wait timeout).
  // `owner` names the delivery (0: none, always cleared); a window last used by another
  // owner is cleared before it is returned.
  std::optional<Window> TryAcquire(int waiter_eventfd, bool holds_windows = false,
                                   uint64_t owner = 0);
  // Makes the window free again; its first `exposed_bytes` (what was registered for a
  // sender to write) are cleared before another owner gets it. The caller has revoked the
  // registration.
  void Release(uint32_t index, uint64_t exposed_bytes);
  uint8_t* data(uint32_t index) const { return base_ + uint64_t{index} * window_bytes_; }
  void ForgetWaiter(int waiter_eventfd);

  uint64_t window_bytes() const { return window_bytes_; }
  uint32_t count() const { return static_cast<uint32_t>(total_); }
  // Windows acquired and not yet released (for metrics).
  uint32_t in_use() const;

 private:
  WindowPool(uint8_t* base, uint64_t mapped, uint64_t window_bytes, size_t total);

  uint8_t* base_;
  uint64_t mapped_;
  uint64_t window_bytes_;
  size_t total_;
  mutable Mutex mu_;
  std::vector<uint32_t> free_ GUARDED_BY(mu_);
  struct Slot {
    uint64_t owner = 0;  // the delivery that last held it
    uint64_t dirty = 0;  // bytes from its start that grants exposed since it was cleared
  };
  std::vector<Slot> slots_ GUARDED_BY(mu_);
  std::map<int, bool> waiters_ GUARDED_BY(mu_);  // eventfd -> it holds no window (it goes first)
};

}  // namespace writ::receiver
