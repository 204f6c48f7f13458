// Compiled (not run) by tests/thread_safety: with WRIT_UNLOCKED_READ it reads a GUARDED_BY
// member without holding its mutex, which -Wthread-safety -Werror must refuse.
#include <chrono>
#include <condition_variable>

#include "common/mutex.h"

namespace writ {

class GuardedCounter {
 public:
  void Add() {
    MutexLock lock(mu_);
    AddLocked();
    cv_.notify_all();
  }
  bool WaitPositive() {
    MutexLock lock(mu_);
    return lock.WaitFor(cv_, std::chrono::milliseconds(1),
                        [this]() REQUIRES(mu_) { return count_ > 0; });
  }
  int Read() {
#ifdef WRIT_UNLOCKED_READ
    return count_;
#else
    MutexLock lock(mu_);
    return count_;
#endif
  }

 private:
  void AddLocked() REQUIRES(mu_) { ++count_; }

  Mutex mu_;
  std::condition_variable cv_;
  int count_ GUARDED_BY(mu_) = 0;
};

}  // namespace writ
