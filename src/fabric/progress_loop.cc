#include "fabric/progress_loop.h"

#include <chrono>
#include <vector>

namespace writ::fabric {

ProgressLoop::ProgressLoop(FabricNode& node, Handler on_record, FailureHandler on_failure)
    : node_(node), on_record_(std::move(on_record)), on_failure_(std::move(on_failure)) {
  thread_ = std::thread([this] { Run(); });
}

ProgressLoop::~ProgressLoop() { Stop(); }

void ProgressLoop::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void ProgressLoop::Run() {
  std::vector<WorkCompletion> records;
  records.reserve(64);
  unsigned idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    records.clear();
    auto polled = node_.Poll(records, 64);
    if (!polled.ok()) {
      if (on_failure_) on_failure_(polled.status());
      return;
    }
    for (const auto& record : records) on_record_(record);
    if (*polled > 0) {
      idle = 0;
      continue;
    }
    // Spin briefly for latency, then back off so an idle target leaves the core free.
    if (++idle < 2000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace writ::fabric
