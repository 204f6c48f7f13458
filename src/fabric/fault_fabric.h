// FaultInjectingFabric: a FabricPort that wraps another one (a FabricNode) and replays
// what providers do wrong, in the spirit of store::FaultInjectionEnv: a chosen write gets
// an error record, no record at all, or a success record for bytes never placed; a write
// is posted with a wrong key or past its window for the real provider to answer; PostWrite
// meets -FI_EAGAIN storms; records come late or out of order; the endpoint is lost in the
// middle of a delivery; a notification is lost at the target; a registration fails.
//
// Writes are named by their ordinal among the writes posted through this port, from 0
// (retries count). Synthesized records are real WorkCompletions: an error record holds
// only request id, status, endpoint and provider error, and its text says it was injected.
// Thread-safe like the port it wraps; faults may be programmed at any time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "common/mutex.h"
#include "fabric/fabric_port.h"

namespace writ::fabric {

enum class WriteFault : uint8_t {
  kErrorRecord,       // not posted; an error record (fi_errno, prov_errno) instead
  kNoRecord,          // not posted; no record ever (shm, wrong key at delivery-complete)
  kSuccessNotPlaced,  // not posted; a success record (tcp, wrong key at the default level)
  kWrongKey,          // posted with another key: the provider answers
  kPastWindow,        // posted to end past the window: the provider answers
  // Posted from the decorator's own registered copy of the source with one byte flipped:
  // the bytes land but no longer match the announced digest (one such write at a time).
  kCorruptSource,
};

struct WriteFaultSpec {
  WriteFault fault = WriteFault::kErrorRecord;
  int fi_errno = FI_ECANCELED;  // kErrorRecord
  int prov_errno = 0;           // kErrorRecord
  // Posted faults may also change how the write asks: a plain write (no remote CQ data,
  // so no notification) and another completion level.
  bool plain_write = false;
  std::optional<CompletionLevel> level;
};

// What the decorator did, for tests to assert against.
struct FaultCounts {
  uint64_t writes = 0;             // PostWrite calls that returned a posted write
  uint64_t writes_forwarded = 0;   // of those, posted to the wrapped port
  uint64_t records_injected = 0;   // records synthesized (error or success)
  uint64_t records_swallowed = 0;  // writes that will never have a record
  uint64_t eagains = 0;            // -FI_EAGAIN answers served (each progressed the port)
  uint64_t records_delayed = 0;    // records held for at least one Poll
  uint64_t batches_reordered = 0;  // releases of two or more records in reverse order
  uint64_t endpoints_lost = 0;
  uint64_t notifications = 0;  // remote-write records read at a target, dropped ones too
  uint64_t notifications_dropped = 0;
  uint64_t registrations_failed = 0;
  uint64_t writes_hung = 0;  // PostWrite calls that waited for ReleaseHang
  uint64_t polls_hung = 0;   // Poll calls that waited for ReleaseHang
  uint64_t polls_failed = 0;
};

class FaultInjectingFabric final : public FabricPort {
 public:
  explicit FaultInjectingFabric(std::unique_ptr<FabricPort> inner);
  // An opener that wraps what `open` opens; `made` (if given) is told each decorator.
  static FabricOpener Wrapping(FabricOpener open,
                               std::function<void(FaultInjectingFabric&)> made = nullptr);

  // Write `ordinal` meets `fault`.
  void FailWrite(uint64_t ordinal, WriteFaultSpec fault);
  // tcp after an error record: every later write gets an FI_ECANCELED record.
  void CancelWritesAfterError();
  // The next `count` attempts to post meet -FI_EAGAIN: each one progresses the port
  // (records read are kept for Poll) and tries again, as FabricNode does.
  void EagainStorm(uint32_t count);
  // Every record is handed out only after `polls` more Poll calls.
  void DelayRecords(uint32_t polls);
  // Records are held until `batch` are held (or the oldest waited `max_polls` polls) and
  // handed out newest first.
  void ReorderRecords(size_t batch, uint32_t max_polls);
  // Once write `ordinal` is posted the endpoint is lost (FI_SHUTDOWN), as FabricNode
  // reports it: every write in flight, that one included, gets an FI_ESHUTDOWN record,
  // later provider records for them are dropped, and later writes fail.
  void LoseEndpointAfterWrite(uint64_t ordinal);
  // Target side: the `ordinal`-th notification (remote write record, from 0) is lost.
  void DropNotification(uint64_t ordinal);
  // The `ordinal`-th registration (from 0) fails.
  void FailRegistration(uint64_t ordinal);
  // The call that would post write `ordinal` does not return until ReleaseHang (then it
  // posts the write), as libfabric 1.17's shm provider spins for ever on the region lock of
  // a peer killed while holding it. Poll and the rest of the port go on meanwhile.
  void HangWrite(uint64_t ordinal);
  // The next Poll does not return until ReleaseHang (then it polls), as a target's progress
  // call spins on its own region's lock held by a sender killed inside a write.
  void HangNextPoll();
  void ReleaseHang();
  // The next Poll fails with `status` (as a completion queue read failing), and every
  // later one too.
  void FailPolls(Status status);

  FaultCounts counts() const;
  // Which threads called Poll, and how often, since the last ForgetPollers.
  std::map<std::thread::id, uint64_t> Pollers() const;
  void ForgetPollers();
  // Waits until some thread has called Poll since the last ForgetPollers; false at `timeout`.
  bool WaitForPoller(std::chrono::milliseconds timeout) const;
  // Waits until `count` remote-write notifications have been dropped (read from the queue
  // and thrown away); false at `timeout`.
  bool WaitForDroppedNotifications(uint64_t count, std::chrono::milliseconds timeout) const;
  // can_wait() says no, as on shm: the progress loop naps between polls instead of blocking
  // on the queues' wait objects (and no connection can lead it). Before the loop starts.
  void HideWaitObjects() { hide_wait_objects_ = true; }

  const ProviderInfo& provider() const override { return inner_->provider(); }
  Result<std::vector<uint8_t>> LocalAddress() override { return inner_->LocalAddress(); }
  Result<Peer> Connect(std::chrono::milliseconds timeout) override;
  Result<Peer> AddPeer(std::span<const uint8_t> address) override;
  Status RemovePeer(const Peer& peer) override { return inner_->RemovePeer(peer); }
  Result<MemoryRegion> Register(void* buffer, size_t length, Access access) override;
  Result<PostedWrite> PostWrite(const WriteRequest& request) override;
  Result<size_t> Poll(std::vector<WorkCompletion>& out, size_t max = 64) override;
  bool can_wait() const override { return !hide_wait_objects_ && inner_->can_wait(); }
  Result<bool> PrepareWait(std::vector<pollfd>& fds) override;
  Status Close() override { return inner_->Close(); }

 private:
  struct Held {
    WorkCompletion record;
    uint64_t since_poll;
  };

  // -FI_EAGAIN answers owed before `request` may be posted; progresses the port for each.
  Status ServeEagainsLocked() REQUIRES(mu_);
  Result<PostedWrite> PostOneLocked(const WriteRequest& request, uint64_t ordinal) REQUIRES(mu_);
  Result<PostedWrite> PostFaultyLocked(const WriteRequest& request, const WriteFaultSpec& fault)
      REQUIRES(mu_);
  Result<PostedWrite> ForwardLocked(const WriteRequest& request) REQUIRES(mu_);
  // Points `request` at a corrupted copy of its source.
  Status CorruptSourceLocked(WriteRequest& request) REQUIRES(mu_);
  void InjectLocked(WorkCompletion record) REQUIRES(mu_);
  void LoseEndpointLocked() REQUIRES(mu_);
  // Takes a record read from the wrapped port: dropped, or held for Poll.
  void IntakeLocked(WorkCompletion record) REQUIRES(mu_);
  Status ReadInnerLocked(size_t max) REQUIRES(mu_);
  size_t ReleaseLocked(std::vector<WorkCompletion>& out, size_t max) REQUIRES(mu_);

  std::unique_ptr<FabricPort> inner_;
  mutable Mutex mu_;
  std::map<uint64_t, WriteFaultSpec> write_faults_ GUARDED_BY(mu_);
  bool cancel_after_error_ GUARDED_BY(mu_) = false;
  bool saw_error_ GUARDED_BY(mu_) = false;
  uint32_t eagains_left_ GUARDED_BY(mu_) = 0;
  uint32_t delay_polls_ GUARDED_BY(mu_) = 0;
  size_t reorder_batch_ GUARDED_BY(mu_) = 0;
  uint32_t reorder_max_polls_ GUARDED_BY(mu_) = 0;
  std::optional<uint64_t> lose_after_write_ GUARDED_BY(mu_);
  bool endpoint_lost_ GUARDED_BY(mu_) = false;
  std::set<uint64_t> drop_notifications_ GUARDED_BY(mu_);
  std::set<uint64_t> fail_registrations_ GUARDED_BY(mu_);
  uint64_t registrations_ GUARDED_BY(mu_) = 0;
  uint64_t polls_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, EndpointId> in_flight_
      GUARDED_BY(mu_);                       // forwarded writes without a record yet
  std::set<uint64_t> lost_ GUARDED_BY(mu_);  // failed by a lost endpoint: records dropped
  std::deque<Held> held_ GUARDED_BY(mu_);
  std::vector<uint8_t> corrupt_copy_
      GUARDED_BY(mu_);  // declared before its registration: outlives it
  MemoryRegion corrupt_region_ GUARDED_BY(mu_);
  FaultCounts counts_ GUARDED_BY(mu_);
  std::optional<uint64_t> hang_at_ GUARDED_BY(mu_);
  bool hanging_ GUARDED_BY(mu_) = false;
  bool hang_next_poll_ GUARDED_BY(mu_) = false;
  Status poll_failure_ GUARDED_BY(mu_);
  std::map<std::thread::id, uint64_t> pollers_ GUARDED_BY(mu_);
  mutable std::condition_variable polled_;
  mutable std::condition_variable dropped_;
  std::atomic<bool> hide_wait_objects_{false};
  std::condition_variable released_;
};

}  // namespace writ::fabric
