#include "store/expiry_sweeper.h"

#include "common/thread.h"

namespace writ::store {

uint64_t SweepExpired(Store& store, uint64_t now_ms, const StoreLog& log,
                      const RemovedHook& removed_hook) {
  auto expired = store.Expired(now_ms);
  if (!expired.ok()) {
    if (log)
      log("store: expiry sweep cannot list expired deliveries: " + expired.status().message());
    return 0;
  }
  uint64_t removed = 0;
  for (const std::string& id : *expired) {
    // Not forced: Remove checks the promised time again (it never removes one early).
    auto removal = store.Remove(id, /*force=*/false, now_ms);
    if (removal.ok()) {
      ++removed;
      if (log) {
        log(RemovalLine(*removal, "its time-to-live passed (its receipt promised it until " +
                                      UnixMsRfc3339(removal->held_until_ms) + ")"));
      }
      if (removed_hook) removed_hook(*removal);
    } else if (removal.status().code() != ErrorCode::kNotFound && log) {
      log("store: expiry sweep could not remove " + id + ": " + removal.status().message());
    }
  }
  return removed;
}

Result<std::unique_ptr<ExpirySweeper>> ExpirySweeper::Start(Store& store,
                                                            std::chrono::milliseconds period,
                                                            StoreLog log, RemovedHook removed) {
  auto sweeper = std::unique_ptr<ExpirySweeper>(
      new ExpirySweeper(store, period, std::move(log), std::move(removed)));
  WRIT_RETURN_IF_ERROR(StartThread(sweeper->thread_, "the expiry sweep's thread",
                                   [s = sweeper.get()] { s->Run(); }));
  return sweeper;
}

ExpirySweeper::~ExpirySweeper() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ExpirySweeper::Run() {
  for (;;) {
    {
      MutexLock lock(mu_);
      if (lock.WaitFor(cv_, period_, [this]() REQUIRES(mu_) { return stop_; })) return;
    }
    (void)SweepExpired(store_, NowUnixMs(), log_, removed_);
  }
}

}  // namespace writ::store
