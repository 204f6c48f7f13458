// A thread that keeps a target's completion queues polled. On tcp and rxm no
// data is placed while the target makes no libfabric calls, so a target must
// run one of these for as long as peers may write to it. Where the node's queues have
// wait objects (FabricPort::can_wait) it blocks in poll() between records instead of
// spinning: on a small machine a spinning thread takes the core the sender and the
// receiver's own connection threads need.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <thread>

#include "common/mutex.h"
#include "fabric/event_fd.h"
#include "fabric/fabric_port.h"

namespace writ::fabric {

class ProgressLoop {
 public:
  // Called on the loop's thread for every record read, notifications included.
  using Handler = std::function<void(const WorkCompletion&)>;
  // Called once if polling itself fails; the loop then stops.
  using FailureHandler = std::function<void(const Status&)>;

  // kBusy (`--poll busy`): never sleeps nor blocks; polls in a loop, yielding between
  // polls, for latency at the cost of a core kept busy even when idle.
  enum class Mode { kBlock, kBusy };

  ProgressLoop(FabricPort& node, Handler on_record, FailureHandler on_failure = nullptr,
               Mode mode = Mode::kBlock);
  ~ProgressLoop();  // stops and joins
  ProgressLoop(const ProgressLoop&) = delete;
  ProgressLoop& operator=(const ProgressLoop&) = delete;

  void Stop();
  // Traffic is about to come (e.g. a window was just granted): leave any long idle nap and
  // poll eagerly again. Any thread may call it.
  void Wake();

 private:
  void Run();

  FabricPort& node_;
  Handler on_record_;
  FailureHandler on_failure_;
  const Mode mode_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> woken_{false};
  Mutex wake_mu_;
  std::condition_variable wake_cv_;
  EventFd wake_fd_;  // raised by Wake and Stop for a loop blocked in poll()
  std::thread thread_;
};

}  // namespace writ::fabric
