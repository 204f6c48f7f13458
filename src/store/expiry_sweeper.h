// The expiry sweep: removes retained deliveries whose time-to-live has passed (their
// receipt's promised time, lifecycle.h), never one before it, never one without a TTL.
// A receiver sweeps once at start (durable deliveries that expired while it was down) and
// then on a thread, every period. Each removal is logged as one line.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <thread>

#include "common/mutex.h"
#include "store/store.h"

namespace writ::store {

using StoreLog = std::function<void(const std::string&)>;
// Told each delivery a sweep removed, after its removal line (the receiver removes what it
// published of it: its --out file).
using RemovedHook = std::function<void(const Removal&)>;

// One sweep at `now_ms`: removes every expired delivery, logs each; returns how many.
uint64_t SweepExpired(Store& store, uint64_t now_ms, const StoreLog& log,
                      const RemovedHook& removed = {});

class ExpirySweeper {
 public:
  // Sweeps `store` every `period` on a thread until destroyed; `store` outlives it.
  static Result<std::unique_ptr<ExpirySweeper>> Start(Store& store,
                                                      std::chrono::milliseconds period,
                                                      StoreLog log, RemovedHook removed = {});
  ~ExpirySweeper();
  ExpirySweeper(const ExpirySweeper&) = delete;
  ExpirySweeper& operator=(const ExpirySweeper&) = delete;

 private:
  ExpirySweeper(Store& store, std::chrono::milliseconds period, StoreLog log, RemovedHook removed)
      : store_(store), period_(period), log_(std::move(log)), removed_(std::move(removed)) {}
  void Run();

  Store& store_;
  const std::chrono::milliseconds period_;
  const StoreLog log_;
  const RemovedHook removed_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace writ::store
