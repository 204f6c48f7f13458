// Routes each remote-write notification (32 bits of remote CQ data: window tag
// in the high 16, chunk index within the window in the low 16) from the fabric
// progress thread to the connection that owns the window.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "writ/status.h"

namespace writ::receiver {

inline constexpr uint32_t NotificationValue(uint16_t tag, uint16_t chunk_in_window) {
  return (uint32_t{tag} << 16) | chunk_in_window;
}

// A connection's queue of notifications, with an eventfd its thread polls.
class Inbox {
 public:
  static Result<std::shared_ptr<Inbox>> Create();
  ~Inbox();
  int event_fd() const { return event_fd_; }
  void Push(uint32_t value);
  // Wakes the connection's thread with no value (e.g. a window was digested).
  void Wake();
  // Moves everything queued into `out` and clears the eventfd.
  void Drain(std::vector<uint32_t>& out);

 private:
  explicit Inbox(int fd) : event_fd_(fd) {}
  int event_fd_;
  Mutex mu_;
  std::vector<uint32_t> values_ GUARDED_BY(mu_);
};

class NotificationRouter {
 public:
  NotificationRouter();
  // A free tag bound to `inbox`, or nothing when all 65535 are live.
  std::optional<uint16_t> Bind(std::shared_ptr<Inbox> inbox);
  void Unbind(uint16_t tag);
  // Progress thread: deliver one notification to the inbox of its tag.
  void Route(uint32_t value);
  // Notifications that named no live window (late, duplicate after revoke, or forged).
  uint64_t unrouted() const { return unrouted_.load(); }

 private:
  Mutex mu_;
  std::vector<std::shared_ptr<Inbox>> by_tag_ GUARDED_BY(mu_);  // index = tag; slot 0 unused
  std::deque<uint16_t> free_ GUARDED_BY(mu_);
  std::atomic<uint64_t> unrouted_{0};
};

}  // namespace writ::receiver
