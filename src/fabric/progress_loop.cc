#include "fabric/progress_loop.h"

#include <poll.h>

#include <chrono>
#include <string>
#include <vector>

namespace writ::fabric {
namespace {
constexpr std::chrono::milliseconds kQuietAfter{200};
// Polls spent yielding before napping: a few hundred microseconds, about a round trip
// after a grant (Wake) or the last record. Longer spins starved the other threads here.
constexpr unsigned kSpinPolls = 200;
constexpr int kWaitTimeoutMs = 100;
// How long Stop waits for a thread reported stuck before leaving it behind.
constexpr std::chrono::milliseconds kComeBackGrace{1000};
// How long TryLead waits for the loop's thread to park (it leaves poll() at once; a turn
// inside the provider takes microseconds).
constexpr std::chrono::milliseconds kParkWithin{100};
}  // namespace

struct ProgressLoop::TurnState {
  std::vector<WorkCompletion> records;
  std::vector<pollfd> wait_fds;
  unsigned idle_polls = 0;
  std::chrono::steady_clock::time_point last_record = std::chrono::steady_clock::now();
};

ProgressLoop::ProgressLoop(FabricPort& node, Handler on_record, FailureHandler on_failure,
                           Mode mode, std::chrono::milliseconds stuck_after)
    : node_(node),
      on_record_(std::move(on_record)),
      on_failure_(std::move(on_failure)),
      mode_(mode) {
  if (node_.can_wait() && mode_ == Mode::kBlock) {
    auto wake = EventFd::Create();
    if (wake.ok()) wake_fd_ = std::move(wake).value();  // else: the polling loop below
  }
  thread_ = std::thread([this] { Run(); });
  if (stuck_after.count() > 0) {
    watch_.AtLeast(stuck_after);
    // Without its watch the loop still runs, as it did before there was one.
    (void)watch_.Start("the progress thread's watch", [this](std::chrono::milliseconds stuck) {
      stuck_.store(true);
      Report(Status::Transport(
          "the fabric's progress thread has been inside one call for " +
          std::to_string(stuck.count()) + " ms (its limit is " +
          std::to_string(watch_.limit().count()) +
          " ms): the provider does not return (libfabric 1.17's shm provider spins for ever on "
          "the lock of a region shared with a peer that was killed holding it); no write to "
          "this receiver is completed any more"));
    });
  }
}

ProgressLoop::~ProgressLoop() { Stop(); }

void ProgressLoop::Wake() {
  if (guest_.load(std::memory_order_relaxed)) return;  // the leader polls anyway
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
  park_cv_.notify_all();
  wake_fd_.Signal();
  watch_.Stop();  // after this no report comes from the watch
  if (!thread_.joinable()) return;
  if (stuck_.load()) {
    MutexLock lock(turn_mu_);
    if (!lock.WaitFor(ended_cv_, kComeBackGrace, [this]() REQUIRES(turn_mu_) { return ended_; })) {
      abandoned_ = true;
      thread_.detach();
      return;
    }
  }
  thread_.join();
}

bool ProgressLoop::abandoned() const {
  MutexLock lock(turn_mu_);
  return abandoned_;
}

void ProgressLoop::Report(const Status& status) {
  if (failed_.exchange(true)) return;
  if (on_failure_) on_failure_(status);
}

void ProgressLoop::Run() {
  TurnState state;
  state.records.reserve(64);
  bool go_on = true;
  while (go_on && !stop_.load(std::memory_order_relaxed)) {
    if (guest_.load()) {
      Park();
      continue;
    }
    watch_.TurnBegins();
    go_on = Turn(state);
    watch_.TurnEnds();
  }
  {
    MutexLock lock(turn_mu_);
    ended_ = true;
  }
  ended_cv_.notify_all();
}

// One poll of every queue, its records handed out, then a wait for more; false: stop.
bool ProgressLoop::Turn(TurnState& state) {
  state.records.clear();
  auto polled = node_.Poll(state.records, 64);
  {
    MutexLock lock(turn_mu_);
    if (abandoned_) return false;  // back from a call Stop gave up on: touch nothing more
    if (!polled.ok()) {
      Report(polled.status());
      return false;
    }
    for (const auto& record : state.records) on_record_(record);
  }
  if (*polled > 0) {
    state.idle_polls = 0;
    state.last_record = std::chrono::steady_clock::now();
    // Fewer than asked for: the queues were drained. Where the loop blocks, go straight to
    // PrepareWait, whose fi_trywait finds any record that came meanwhile (and then we poll
    // again): one poll of every queue per wake-up instead of two.
    if (*polled >= 64 || wake_fd_.fd() < 0) return true;
  }
  if (mode_ == Mode::kBusy) {
    std::this_thread::yield();
    return true;
  }
  if (wake_fd_.fd() >= 0) return Block(state.wait_fds);
  Nap(state);
  return true;
}

// Blocks in poll() on the queues' wait objects and the wake eventfd; false: stop.
bool ProgressLoop::Block(std::vector<pollfd>& wait_fds) {
  auto prepared = node_.PrepareWait(wait_fds);
  if (!prepared.ok()) {
    MutexLock lock(turn_mu_);
    if (!abandoned_) Report(prepared.status());
    return false;
  }
  if (!*prepared) return true;  // a queue has something: poll it first
  wait_fds.push_back({wake_fd_.fd(), POLLIN, 0});
  // The timeout only bounds how long a missed wake-up could cost.
  const int ready = poll(wait_fds.data(), wait_fds.size(), kWaitTimeoutMs);
  if (ready > 0 && (wait_fds.back().revents & POLLIN) != 0) wake_fd_.Drain();  // raised only
  return true;
}

bool ProgressLoop::TryLead() {
  if (wake_fd_.fd() < 0 || failed_.load() || guest_.exchange(true)) return false;
  wake_fd_.Signal();  // out of its poll(), to park
  MutexLock lock(wake_mu_);
  // A thread inside the provider for longer than this is left to the watch; the loop stays
  // its own leader.
  if (lock.WaitFor(park_cv_, kParkWithin,
                   [this]() REQUIRES(wake_mu_) {
                     return parked_ || stop_.load(std::memory_order_relaxed);
                   }) &&
      parked_) {
    return true;
  }
  guest_.store(false);
  park_cv_.notify_all();
  return false;
}

void ProgressLoop::Resign() {
  {
    MutexLock lock(wake_mu_);
    guest_.store(false);
  }
  park_cv_.notify_all();
}

void ProgressLoop::Park() {
  MutexLock lock(wake_mu_);
  parked_ = true;
  park_cv_.notify_all();
  lock.Wait(park_cv_, [this] { return !guest_.load() || stop_.load(std::memory_order_relaxed); });
  parked_ = false;
}

Result<size_t> ProgressLoop::LeadPoll() {
  lead_records_.clear();
  watch_.TurnBegins();
  auto polled = node_.Poll(lead_records_, 64);
  watch_.TurnEnds();
  MutexLock lock(turn_mu_);
  if (!polled.ok()) {
    Report(polled.status());
    return polled.status();
  }
  for (const auto& record : lead_records_) on_record_(record);
  return polled;
}

Result<bool> ProgressLoop::LeadPrepareWait(std::vector<pollfd>& fds) {
  watch_.TurnBegins();
  auto prepared = node_.PrepareWait(lead_fds_);
  watch_.TurnEnds();
  if (!prepared.ok()) {
    MutexLock lock(turn_mu_);
    Report(prepared.status());
    return prepared.status();
  }
  if (*prepared) fds.insert(fds.end(), lead_fds_.begin(), lead_fds_.end());
  return prepared;
}

// Spin briefly for latency, then back off so an idle target leaves the core free: 50 us
// naps while traffic is recent, 1 ms naps once the target has been quiet for a while (50 us
// naps alone cost an idle `writ serve` a quarter of a core here).
void ProgressLoop::Nap(TurnState& state) {
  if (++state.idle_polls < kSpinPolls) {
    std::this_thread::yield();
  } else if (std::chrono::steady_clock::now() - state.last_record < kQuietAfter) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  } else {
    MutexLock lock(wake_mu_);
    lock.WaitFor(wake_cv_, std::chrono::milliseconds(1), [this] {
      return woken_.load(std::memory_order_relaxed) || stop_.load(std::memory_order_relaxed);
    });
  }
  if (woken_.exchange(false, std::memory_order_relaxed)) {
    state.idle_polls = 0;
    state.last_record = std::chrono::steady_clock::now();
  }
}

}  // namespace writ::fabric
