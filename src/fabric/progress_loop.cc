#include "fabric/progress_loop.h"

#include <poll.h>

#include <chrono>
#include <vector>

namespace writ::fabric {
namespace {
constexpr std::chrono::milliseconds kQuietAfter{200};
// Polls spent yielding before napping: a few hundred microseconds, about a round trip
// after a grant (Wake) or the last record. Longer spins starved the other threads here.
constexpr unsigned kSpinPolls = 200;
constexpr int kWaitTimeoutMs = 100;
}  // namespace

ProgressLoop::ProgressLoop(FabricPort& node, Handler on_record, FailureHandler on_failure,
                           Mode mode)
    : node_(node),
      on_record_(std::move(on_record)),
      on_failure_(std::move(on_failure)),
      mode_(mode) {
  if (node_.can_wait() && mode_ == Mode::kBlock) {
    auto wake = EventFd::Create();
    if (wake.ok()) wake_fd_ = std::move(wake).value();  // else: the polling loop below
  }
  thread_ = std::thread([this] { Run(); });
}

ProgressLoop::~ProgressLoop() { Stop(); }

void ProgressLoop::Wake() {
  {
    MutexLock lock(wake_mu_);
    woken_.store(true, std::memory_order_relaxed);
  }
  wake_cv_.notify_one();
  wake_fd_.Signal();
}

void ProgressLoop::Stop() {
  {
    MutexLock lock(wake_mu_);
    stop_.store(true, std::memory_order_relaxed);
  }
  wake_cv_.notify_one();
  wake_fd_.Signal();
  if (thread_.joinable()) thread_.join();
}

void ProgressLoop::Run() {
  std::vector<WorkCompletion> records;
  records.reserve(64);
  std::vector<pollfd> wait_fds;
  unsigned idle_polls = 0;
  auto last_record = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    records.clear();
    auto polled = node_.Poll(records, 64);
    if (!polled.ok()) {
      if (on_failure_) on_failure_(polled.status());
      return;
    }
    for (const auto& record : records) on_record_(record);
    if (*polled > 0) {
      idle_polls = 0;
      last_record = std::chrono::steady_clock::now();
      // Fewer than asked for: the queues were drained. Where the loop blocks, go straight to
      // PrepareWait, whose fi_trywait finds any record that came meanwhile (and then we poll
      // again): one poll of every queue per wake-up instead of two.
      if (*polled >= 64 || wake_fd_.fd() < 0) continue;
    }
    if (mode_ == Mode::kBusy) {
      std::this_thread::yield();
      continue;
    }
    if (wake_fd_.fd() >= 0) {
      auto prepared = node_.PrepareWait(wait_fds);
      if (!prepared.ok()) {
        if (on_failure_) on_failure_(prepared.status());
        return;
      }
      if (!*prepared) continue;  // a queue has something: poll it first
      wait_fds.push_back({wake_fd_.fd(), POLLIN, 0});
      // The timeout only bounds how long a missed wake-up could cost.
      const int ready = poll(wait_fds.data(), wait_fds.size(), kWaitTimeoutMs);
      if (ready > 0 && (wait_fds.back().revents & POLLIN) != 0) wake_fd_.Drain();  // raised only
      continue;
    }
    // Spin briefly for latency, then back off so an idle target leaves the core free:
    // 50 us naps while traffic is recent, 1 ms naps once the target has been quiet for a
    // while (50 us naps alone cost an idle `writ serve` a quarter of a core here).
    if (++idle_polls < kSpinPolls) {
      std::this_thread::yield();
    } else if (std::chrono::steady_clock::now() - last_record < kQuietAfter) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else {
      MutexLock lock(wake_mu_);
      lock.WaitFor(wake_cv_, std::chrono::milliseconds(1), [this] {
        return woken_.load(std::memory_order_relaxed) || stop_.load(std::memory_order_relaxed);
      });
    }
    if (woken_.exchange(false, std::memory_order_relaxed)) {
      idle_polls = 0;
      last_record = std::chrono::steady_clock::now();
    }
  }
}

}  // namespace writ::fabric
