// Where a receiver is in its shutdown (Receiver::Shutdown), shared by every connection:
// running; draining (no new connections or deliveries, those in progress may finish);
// aborting (the drain deadline passed: what remains is refused and ended).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "writ/receiver.h"

namespace writ::receiver {

class ShutdownState {
 public:
  enum class Phase { kRunning, kDraining, kAborting };

  // Both only move forward: a receiver aborting never drains again.
  void BeginDrain(std::chrono::milliseconds drain) {
    drain_ms_.store(drain.count());
    Phase expected = Phase::kRunning;
    phase_.compare_exchange_strong(expected, Phase::kDraining);
  }
  void BeginAbort() { phase_.store(Phase::kAborting); }
  bool begun() const { return phase_.load() != Phase::kRunning; }
  bool aborting() const { return phase_.load() == Phase::kAborting; }
  int64_t drain_ms() const { return drain_ms_.load(); }

  // A delivery that ended with its receipts while draining, and one ended by the abort.
  void NoteDrained(const std::string& id) { NoteIn(true, id); }
  void NoteAborted(const std::string& id) { NoteIn(false, id); }
  ShutdownSummary Summary() const {
    MutexLock lock(mu_);
    return ShutdownSummary{drained_, aborted_, deadline_passed_};
  }
  // Every connection that ends says so, so Shutdown waits for them instead of polling.
  uint64_t connections_ended() const {
    MutexLock lock(mu_);
    return connections_ended_;
  }
  void NoteConnectionEnded() {
    {
      MutexLock lock(mu_);
      ++connections_ended_;
    }
    connection_ended_.notify_all();
  }
  // Returns once a connection has ended since connections_ended() said `seen`, or at
  // `deadline`.
  void WaitForConnectionEnd(uint64_t seen, std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mu_);
    lock.WaitUntil(connection_ended_, deadline,
                   [this, seen]() REQUIRES(mu_) { return connections_ended_ != seen; });
  }

  void NoteDeadlinePassed() {
    MutexLock lock(mu_);
    deadline_passed_ = true;
  }

 private:
  void NoteIn(bool drained, const std::string& id) {
    if (!begun()) return;
    MutexLock lock(mu_);
    (drained ? drained_ : aborted_).push_back(id);
  }

  std::atomic<Phase> phase_{Phase::kRunning};
  std::atomic<int64_t> drain_ms_{0};
  mutable Mutex mu_;
  std::vector<std::string> drained_ GUARDED_BY(mu_);
  std::vector<std::string> aborted_ GUARDED_BY(mu_);
  bool deadline_passed_ GUARDED_BY(mu_) = false;
  uint64_t connections_ended_ GUARDED_BY(mu_) = 0;
  std::condition_variable connection_ended_;
};

}  // namespace writ::receiver
