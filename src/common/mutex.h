// writ::Mutex and writ::MutexLock: std::mutex and std::unique_lock with the capability
// annotations clang's -Wthread-safety checks (see thread_annotations.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "common/thread_annotations.h"

namespace writ {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope. Wraps a std::unique_lock so std::condition_variable can wait on
// it; a wait releases and retakes the mutex, so to the analysis the mutex stays held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Lock() ACQUIRE() { lock_.lock(); }
  void Unlock() RELEASE() { lock_.unlock(); }

  // A predicate reading guarded members is a lambda marked REQUIRES(that mutex).
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <typename Pred>
  void Wait(std::condition_variable& cv, Pred pred) NO_THREAD_SAFETY_ANALYSIS {
    cv.wait(lock_, std::move(pred));
  }
  template <typename Rep, typename Period>
  std::cv_status WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> d) {
    return cv.wait_for(lock_, d);
  }
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> d,
               Pred pred) NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_for(lock_, d, std::move(pred));
  }
  template <typename Clock, typename Duration, typename Pred>
  bool WaitUntil(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> t,
                 Pred pred) NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_until(lock_, t, std::move(pred));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace writ
