// Whether a receiver connection may lead the fabric's progress loop (fabric::ProgressLoop::
// TryLead): read the completion queues on its own thread, so that a small delivery's
// notification reaches it with no hand-off from the progress thread (no wake-up, no eventfd
// written and read), and the delivery runs to completion on the thread that read it.
//
// A connection leads only while that costs nothing else:
//   - it is the receiver's only connection (a leader polls for every connection, and one
//     busy with its own work would delay the others' writes);
//   - the fabric has not failed;
//   - none of its runs needs the fabric polled while this thread works elsewhere (a
//     window's chunks landing, a processing step, a commit to the device or to replicas:
//     NeedFabricThread), until no run is left;
//   - its thread is not saturated. A leader that finds work already waiting at
//     kBusyWaitsToFollow waits in a row is the bottleneck: two threads, one polling while
//     the other works, then deliver more (measured: docs/benchmarks.md). It follows until
//     a wait finds nothing to do for kIdleAtLeast.
#pragma once

#include <chrono>

namespace writ::receiver {

class LeadPolicy {
 public:
  static constexpr int kBusyWaitsToFollow = 16;
  static constexpr std::chrono::milliseconds kIdleAtLeast{1};

  bool MayLead(int connections_running, bool fabric_failed) const {
    return connections_running == 1 && !fabric_failed && !fabric_thread_needed_ && !saturated_;
  }
  // After each wait of the connection's thread: whether it led the loop meanwhile, whether
  // work was already waiting (it did not block), and how long the wait took.
  void AfterWait(bool leading, bool work_was_waiting, std::chrono::nanoseconds waited);
  void NeedFabricThread() { fabric_thread_needed_ = true; }
  // The connection has no run left.
  void RunsEnded() { fabric_thread_needed_ = false; }
  bool saturated() const { return saturated_; }

 private:
  bool fabric_thread_needed_ = false;
  bool saturated_ = false;
  int busy_waits_ = 0;
};

}  // namespace writ::receiver
