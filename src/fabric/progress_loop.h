// A thread that keeps a target's completion queues polled. On tcp and rxm no
// data is placed while the target makes no libfabric calls, so a target must
// run one of these for as long as peers may write to it. Where the node's queues have
// wait objects (FabricPort::can_wait) it blocks in poll() between records instead of
// spinning: on a small machine a spinning thread takes the core the sender and the
// receiver's own connection threads need.
//
// A call into the provider that never returns (shm: a peer killed holding the spin lock
// of the region they share) is seen by a TurnWatch around each turn and reported through
// the failure handler; Stop then leaves the stuck thread behind (see Stop).
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/turn_watch.h"
#include "fabric/event_fd.h"
#include "fabric/fabric_port.h"

namespace writ::fabric {

class ProgressLoop {
 public:
  // Called on the loop's thread for every record read, notifications included.
  using Handler = std::function<void(const WorkCompletion&)>;
  // Called at most once: polling itself failed (the loop then stops), or one turn has not
  // ended within `stuck_after` (on the watch's thread; the loop's thread is still inside
  // the provider).
  using FailureHandler = std::function<void(const Status&)>;

  // kBusy (`--poll busy`): never sleeps nor blocks; polls in a loop, yielding between
  // polls, for latency at the cost of a core kept busy even when idle.
  enum class Mode { kBlock, kBusy };

  // `stuck_after`: zero for no watch, else at least TurnWatch::kMinLimit.
  ProgressLoop(FabricPort& node, Handler on_record, FailureHandler on_failure = nullptr,
               Mode mode = Mode::kBlock,
               std::chrono::milliseconds stuck_after = std::chrono::milliseconds{0});
  ~ProgressLoop();  // stops and joins (abandoned(): the owner must not destroy it)
  ProgressLoop(const ProgressLoop&) = delete;
  ProgressLoop& operator=(const ProgressLoop&) = delete;

  // Stops the loop and joins its thread. When the watch has reported it stuck and it does
  // not come back within a second, the thread is detached instead and abandoned() holds:
  // the thread may still return into this object and the node, so the owner must then
  // leave both allocated (it will not call the handlers again).
  void Stop();
  bool abandoned() const;
  // Traffic is about to come (e.g. a window was just granted): leave any long idle nap and
  // poll eagerly again. Any thread may call it.
  void Wake();

  // A guest: a thread that blocks in poll() anyway (a receiver connection's) takes the
  // loop's turns while it holds the lead, waiting on the queues' wait objects along with
  // its own descriptors; the loop's thread is parked meanwhile. What it saves: the hand-off
  // of each batch of records from one thread to another (a wake-up, an eventfd written and
  // read). Only where the loop blocks (FabricPort::can_wait, Mode::kBlock), and never after
  // a failure. The guest's provider calls are watched like the loop's own.
  // True: the caller leads now (the loop's thread has parked); false: another leads, the
  // loop cannot be led, or its thread did not park within a short wait.
  bool TryLead();
  // The leader hands the turns back to the loop's thread.
  void Resign();
  // The leader: one poll of every queue, its records handed to the handler; how many. A
  // failed poll is reported (as the loop's own would be) and returned.
  Result<size_t> LeadPoll();
  // The leader, before it blocks: the queues' wait objects appended to `fds`, or false
  // when a queue must be polled first (then it must not block).
  Result<bool> LeadPrepareWait(std::vector<pollfd>& fds);

 private:
  struct TurnState;
  void Run();
  bool Turn(TurnState& state);
  bool Block(std::vector<pollfd>& wait_fds);
  void Nap(TurnState& state);
  // The loop's thread while a guest leads: waits until it resigns or Stop.
  void Park();
  // Tells on_failure_, once. From the loop's thread only under turn_mu_ and not abandoned.
  void Report(const Status& status);

  FabricPort& node_;
  Handler on_record_;
  FailureHandler on_failure_;
  const Mode mode_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> woken_{false};
  Mutex wake_mu_;
  std::condition_variable wake_cv_;
  EventFd wake_fd_;  // raised by Wake and Stop for a loop blocked in poll()
  TurnWatch watch_;  // started only with a `stuck_after`
  // A guest leads (TryLead): the loop's thread parks at its next turn.
  std::atomic<bool> guest_{false};
  bool parked_ GUARDED_BY(wake_mu_) = false;
  std::condition_variable park_cv_;
  std::vector<pollfd> lead_fds_;              // the leader's, between LeadPrepareWait calls
  std::vector<WorkCompletion> lead_records_;  // the leader's
  std::atomic<bool> failed_{false};
  std::atomic<bool> stuck_{false};  // the watch found a turn that does not end
  // Held while the loop's thread hands records to the handler or reports a failure: once
  // Stop has set `abandoned_` under it, a thread coming back from the provider calls
  // nothing of the owner's.
  mutable Mutex turn_mu_;
  bool abandoned_ GUARDED_BY(turn_mu_) = false;
  bool ended_ GUARDED_BY(turn_mu_) = false;  // Run has returned
  std::condition_variable ended_cv_;
  std::thread thread_;
};

}  // namespace writ::fabric
