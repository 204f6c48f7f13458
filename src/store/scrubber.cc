#include "store/scrubber.h"

#include <chrono>
#include <system_error>

#include "store/durable_store.h"

namespace writ::store {

using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<Scrubber>> Scrubber::Start(DurableStore& store, uint64_t bytes_per_second) {
  auto scrubber = std::unique_ptr<Scrubber>(new Scrubber(store, bytes_per_second));
  try {
    scrubber->thread_ = std::thread([s = scrubber.get()] { s->Run(); });
  } catch (const std::system_error& e) {  // e.g. EAGAIN: no thread to be had
    return Status::Internal(std::string("cannot start the store scrub's thread: ") + e.what());
  }
  return scrubber;
}

Scrubber::~Scrubber() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Scrubber::Idle(int64_t ms) {
  MutexLock lock(mu_);
  return !lock.WaitFor(cv_, std::chrono::milliseconds(ms),
                       [this]() REQUIRES(mu_) { return stop_; });
}

bool Scrubber::Pace(uint64_t bytes) {
  paced_ += bytes;
  const auto due = start_ + std::chrono::microseconds(paced_ * 1000000 / rate_);
  MutexLock lock(mu_);
  return !lock.WaitUntil(cv_, due, [this]() REQUIRES(mu_) { return stop_; });
}

void Scrubber::Run() {
  // A pass every so often at most, however fast the rate: an empty or tiny store is not
  // re-read in a busy loop.
  constexpr int64_t kMinPassMs = 1000;
  for (;;) {
    const auto began = Clock::now();
    if (!Pass()) return;
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began).count();
    if (!Idle(std::max<int64_t>(0, kMinPassMs - took))) return;
  }
}

bool Scrubber::Pass() {
  auto rows = store_.List();
  if (!rows.ok()) {
    store_.Log("store scrub: cannot list the retained deliveries: " + rows.status().message());
    return true;
  }
  start_ = Clock::now();
  paced_ = 0;
  bool stopped = false;
  for (const IndexRow& row : *rows) {
    Status s = store_.StreamAndStamp(row, [&](std::span<const uint8_t> block) {
      if (!Pace(block.size())) {
        stopped = true;
        return Status::Cancelled("scrub stopped");
      }
      return Status::Ok();
    });
    if (stopped) return false;
    if (s.code() == ErrorCode::kValidation) {
      (void)store_.QuarantineRow(row, "the scrub found " + s.message());
      store_.NoteScrubbed(ScrubFinding::kQuarantined);
    } else if (!s.ok()) {
      store_.Log("store scrub: could not re-hash " + row.id + ": " + s.message());
      store_.NoteScrubbed(ScrubFinding::kUnreadable);
    } else {
      store_.NoteScrubbed(ScrubFinding::kPassed);
    }
    {
      MutexLock lock(mu_);
      if (stop_) return false;
    }
  }
  return true;
}

}  // namespace writ::store
