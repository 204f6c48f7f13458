// Routes each remote-write notification (32 bits of remote CQ data: window tag
// in the high 16, chunk index within the window in the low 16) from the fabric
// progress thread to the connection that owns the window.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "common/mutex.h"
#include "fabric/fabric_port.h"
#include "writ/status.h"

namespace writ::receiver {

inline constexpr uint32_t NotificationValue(uint16_t tag, uint16_t chunk_in_window) {
  return (uint32_t{tag} << 16) | chunk_in_window;
}

// A connection's queue of notifications, with an eventfd its thread polls. A push raises
// the eventfd only while the thread says it sleeps: a thread that is awake drains the
// queue before it next blocks, so waking it would be a write and a read for nothing.
class Inbox {
 public:
  static Result<std::shared_ptr<Inbox>> Create();
  ~Inbox();
  int event_fd() const { return event_fd_; }
  void Push(uint32_t value);
  // Wakes the connection's thread with no value (e.g. a window was digested), asleep or not.
  void Wake();
  // The connection's thread, before it blocks: from now on a push raises the eventfd. False
  // when values already wait, and then it must not block.
  bool Sleep();
  // The connection's thread, after its wait: pushes no longer raise the eventfd.
  void Awake() { sleeping_.store(false); }
  bool HasValues() const;
  // Moves everything queued into `out`; clears the eventfd when `signaled` (poll saw it
  // readable), else leaves it alone: a read of an eventfd that was not raised is a system
  // call for nothing, and a value pushed meanwhile is taken here anyway (its wake-up costs
  // the next poll one early return, never a lost value).
  void Drain(std::vector<uint32_t>& out, bool signaled = true);

 private:
  explicit Inbox(int fd) : event_fd_(fd) {}
  int event_fd_;
  // Sequentially consistent with the queue's lock: either Sleep sees a value pushed, or
  // the push sees the thread asleep and raises the eventfd.
  std::atomic<bool> sleeping_{false};
  mutable Mutex mu_;
  std::vector<uint32_t> values_ GUARDED_BY(mu_);
};

// A tag counts only for the peer it was granted to: a notification is routed when it came
// from that peer's endpoint (and, on RDM, that peer's address), whatever tag it names. Tags
// are drawn at random among the free ones, so one connection cannot guess another's.
class NotificationRouter {
 public:
  NotificationRouter();
  // The provider names every remote write's writer (ProviderInfo::names_writers): a
  // notification without a known writer then counts for no window. Set before traffic.
  void RequireNamedWriters() { writers_named_.store(true); }
  // A free tag bound to `inbox` for notifications from `writer`, or nothing when all 65535
  // are live.
  std::optional<uint16_t> Bind(std::shared_ptr<Inbox> inbox, const fabric::Peer& writer);
  void Unbind(uint16_t tag);
  // Progress thread: deliver one notification, written by `writer`, to the inbox of its tag.
  void Route(const fabric::Peer& writer, uint32_t value);
  // Notifications that named no live window (late, duplicate after revoke), or a window of
  // another peer (forged).
  uint64_t unrouted() const { return unrouted_.load(); }
  uint64_t forged() const { return forged_.load(); }

 private:
  struct Binding {
    std::shared_ptr<Inbox> inbox;
    fabric::Peer writer;
  };
  Mutex mu_;
  std::vector<Binding> by_tag_ GUARDED_BY(mu_);  // index = tag; slot 0 unused
  std::deque<uint16_t> free_ GUARDED_BY(mu_);    // the longest free at the back
  std::mt19937 draw_ GUARDED_BY(mu_);
  std::atomic<bool> writers_named_{false};
  std::atomic<uint64_t> unrouted_{0};
  std::atomic<uint64_t> forged_{0};
};

}  // namespace writ::receiver
