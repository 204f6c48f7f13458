// The durable store's background scrub: re-hashes every retained payload against its
// digest, over and over, at a bounded rate (bytes per second), so that a payload damaged
// in place (a bad sector, a torn write after a power cut, an operator's mistake) is found
// without waiting for the next restart or for someone to ask for it. A payload that fails
// is quarantined (quarantine.h) and its row dropped: it is never reported retained again.
// Each finding goes to the store's log.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>

#include "common/mutex.h"
#include "writ/status.h"

namespace writ::store {

class DurableStore;

class Scrubber {
 public:
  // Starts the scrub thread; `bytes_per_second` > 0. An error when no thread can be made.
  static Result<std::unique_ptr<Scrubber>> Start(DurableStore& store, uint64_t bytes_per_second);
  // Stops the thread (a re-hash in progress ends at its next block).
  ~Scrubber();
  Scrubber(const Scrubber&) = delete;
  Scrubber& operator=(const Scrubber&) = delete;

 private:
  Scrubber(DurableStore& store, uint64_t bytes_per_second)
      : store_(store), rate_(bytes_per_second) {}
  void Run();
  // One pass over every retained delivery; false when stopped.
  bool Pass();
  // Waits until `bytes` re-hashed since `start_` keep within the rate; false when stopped.
  bool Pace(uint64_t bytes);
  // Waits `ms` milliseconds, or until stopped; false when stopped.
  bool Idle(int64_t ms);

  DurableStore& store_;
  const uint64_t rate_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point start_;
  uint64_t paced_ = 0;
  std::thread thread_;
};

}  // namespace writ::store
