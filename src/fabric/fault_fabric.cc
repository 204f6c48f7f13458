#include "fabric/fault_fabric.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace writ::fabric {
namespace {

constexpr std::string_view kInjected = "injected by FaultInjectingFabric: ";

std::string WriteName(uint64_t ordinal) { return "write " + std::to_string(ordinal); }

}  // namespace

FaultInjectingFabric::FaultInjectingFabric(std::unique_ptr<FabricPort> inner)
    : inner_(std::move(inner)) {}

FabricOpener FaultInjectingFabric::Wrapping(FabricOpener open,
                                            std::function<void(FaultInjectingFabric&)> made) {
  return [open = std::move(open), made = std::move(made)](
             const NodeOptions& options) -> Result<std::unique_ptr<FabricPort>> {
    WRIT_ASSIGN_OR_RETURN(auto inner, open(options));
    auto port = std::make_unique<FaultInjectingFabric>(std::move(inner));
    if (made) made(*port);
    return std::unique_ptr<FabricPort>(std::move(port));
  };
}

void FaultInjectingFabric::FailWrite(uint64_t ordinal, WriteFaultSpec fault) {
  MutexLock lock(mu_);
  write_faults_[ordinal] = fault;
}

void FaultInjectingFabric::CancelWritesAfterError() {
  MutexLock lock(mu_);
  cancel_after_error_ = true;
}

void FaultInjectingFabric::EagainStorm(uint32_t count) {
  MutexLock lock(mu_);
  eagains_left_ += count;
}

void FaultInjectingFabric::DelayRecords(uint32_t polls) {
  MutexLock lock(mu_);
  delay_polls_ = polls;
}

void FaultInjectingFabric::ReorderRecords(size_t batch, uint32_t max_polls) {
  MutexLock lock(mu_);
  reorder_batch_ = batch;
  reorder_max_polls_ = max_polls;
}

void FaultInjectingFabric::LoseEndpointAfterWrite(uint64_t ordinal) {
  MutexLock lock(mu_);
  lose_after_write_ = ordinal;
}

void FaultInjectingFabric::DropNotification(uint64_t ordinal) {
  MutexLock lock(mu_);
  drop_notifications_.insert(ordinal);
}

void FaultInjectingFabric::FailRegistration(uint64_t ordinal) {
  MutexLock lock(mu_);
  fail_registrations_.insert(ordinal);
}

void FaultInjectingFabric::HangWrite(uint64_t ordinal) {
  MutexLock lock(mu_);
  hang_at_ = ordinal;
}

void FaultInjectingFabric::HangNextPoll() {
  MutexLock lock(mu_);
  hang_next_poll_ = true;
}

void FaultInjectingFabric::FailPolls(Status status) {
  MutexLock lock(mu_);
  poll_failure_ = std::move(status);
}

void FaultInjectingFabric::ReleaseHang() {
  {
    MutexLock lock(mu_);
    hanging_ = false;
  }
  released_.notify_all();
}

FaultCounts FaultInjectingFabric::counts() const {
  MutexLock lock(mu_);
  return counts_;
}

std::map<std::thread::id, uint64_t> FaultInjectingFabric::Pollers() const {
  MutexLock lock(mu_);
  return pollers_;
}

bool FaultInjectingFabric::WaitForPoller(std::chrono::milliseconds timeout) const {
  MutexLock lock(mu_);
  return lock.WaitFor(polled_, timeout, [this]() REQUIRES(mu_) { return !pollers_.empty(); });
}

bool FaultInjectingFabric::WaitForDroppedNotifications(uint64_t count,
                                                       std::chrono::milliseconds timeout) const {
  MutexLock lock(mu_);
  return lock.WaitFor(dropped_, timeout,
                      [&]() REQUIRES(mu_) { return counts_.notifications_dropped >= count; });
}

void FaultInjectingFabric::ForgetPollers() {
  MutexLock lock(mu_);
  pollers_.clear();
}

Result<Peer> FaultInjectingFabric::Connect(std::chrono::milliseconds timeout) {
  return inner_->Connect(timeout);
}

Result<Peer> FaultInjectingFabric::AddPeer(std::span<const uint8_t> address) {
  return inner_->AddPeer(address);
}

Result<MemoryRegion> FaultInjectingFabric::Register(void* buffer, size_t length, Access access) {
  {
    MutexLock lock(mu_);
    const uint64_t ordinal = registrations_++;
    if (fail_registrations_.count(ordinal) != 0) {
      ++counts_.registrations_failed;
      return Status::Transport(std::string(kInjected) + "registration " + std::to_string(ordinal) +
                               " failed");
    }
  }
  return inner_->Register(buffer, length, access);
}

Result<PostedWrite> FaultInjectingFabric::PostWrite(const WriteRequest& request) {
  MutexLock lock(mu_);
  // What FabricNode answers for a write to an endpoint that saw FI_SHUTDOWN.
  if (endpoint_lost_) return Status::Transport("endpoint was shut down (FI_SHUTDOWN)");
  if (hang_at_ && *hang_at_ == counts_.writes) {
    hang_at_.reset();
    hanging_ = true;
    ++counts_.writes_hung;
    lock.Wait(released_, [this]() REQUIRES(mu_) { return !hanging_; });  // lets mu_ go
  }
  const uint64_t ordinal = counts_.writes;
  WRIT_RETURN_IF_ERROR(ServeEagainsLocked());
  Result<PostedWrite> posted = PostOneLocked(request, ordinal);
  if (posted.ok() && lose_after_write_ && *lose_after_write_ == ordinal) LoseEndpointLocked();
  return posted;
}

Result<PostedWrite> FaultInjectingFabric::PostOneLocked(const WriteRequest& request,
                                                        uint64_t ordinal) {
  if (cancel_after_error_ && saw_error_) {
    WriteFaultSpec cancelled;
    cancelled.fi_errno = FI_ECANCELED;
    return PostFaultyLocked(request, cancelled);
  }
  if (auto it = write_faults_.find(ordinal); it != write_faults_.end()) {
    return PostFaultyLocked(request, it->second);
  }
  return ForwardLocked(request);
}

Status FaultInjectingFabric::ServeEagainsLocked() {
  while (eagains_left_ > 0) {
    --eagains_left_;
    ++counts_.eagains;
    WRIT_RETURN_IF_ERROR(ReadInnerLocked(SIZE_MAX));
  }
  return Status::Ok();
}

Result<PostedWrite> FaultInjectingFabric::PostFaultyLocked(const WriteRequest& request,
                                                           const WriteFaultSpec& fault) {
  const std::string name = WriteName(counts_.writes);
  WriteRequest changed = request;
  if (fault.plain_write) changed.remote_data.reset();
  if (fault.level) changed.level = *fault.level;
  switch (fault.fault) {
    case WriteFault::kErrorRecord:
      InjectLocked(WorkCompletion::Error(
          request.request_id, request.peer.endpoint, fault.fi_errno,
          ProviderError{fault.prov_errno, std::string(kInjected) + name + " failed"}));
      break;
    case WriteFault::kNoRecord: ++counts_.records_swallowed; break;
    case WriteFault::kSuccessNotPlaced:
      InjectLocked(WorkCompletion::Success(
          request.request_id, request.peer.endpoint,
          {Operation::kWrite, FI_RMA | FI_WRITE, std::nullopt, std::nullopt}));
      break;
    case WriteFault::kWrongKey:
      changed.remote.key ^= 0x5a5a5a5a5a5a5a5aull;
      return ForwardLocked(changed);
    case WriteFault::kPastWindow:
      // Starts inside the window and ends past it (the whole write past it when 1 byte).
      changed.remote_offset =
          changed.remote.length - std::min(changed.length / 2, changed.remote.length);
      return ForwardLocked(changed);
    case WriteFault::kCorruptSource:
      WRIT_RETURN_IF_ERROR(CorruptSourceLocked(changed));
      return ForwardLocked(changed);
  }
  ++counts_.writes;
  return PostedWrite{changed.level, inner_->provider().Grant(changed.level)};
}

Result<PostedWrite> FaultInjectingFabric::ForwardLocked(const WriteRequest& request) {
  WRIT_ASSIGN_OR_RETURN(PostedWrite posted, inner_->PostWrite(request));
  ++counts_.writes;
  ++counts_.writes_forwarded;
  in_flight_[request.request_id] = request.peer.endpoint;
  return posted;
}

Status FaultInjectingFabric::CorruptSourceLocked(WriteRequest& request) {
  if (request.length == 0 || (request.local == nullptr && request.gather.empty())) {
    return Status::Ok();
  }
  if (corrupt_copy_.size() < request.length) {
    (void)corrupt_region_.Close();
    corrupt_copy_.assign(request.length, 0);
    WRIT_ASSIGN_OR_RETURN(
        corrupt_region_,
        inner_->Register(corrupt_copy_.data(), corrupt_copy_.size(), Access::kLocalSource));
  }
  if (request.gather.empty()) {
    std::memcpy(corrupt_copy_.data(), request.local->data() + request.local_offset, request.length);
  } else {  // a gathered source: flattened into the copy
    uint64_t at = 0;
    for (const LocalPiece& piece : request.gather) {
      std::memcpy(corrupt_copy_.data() + at, piece.region->data() + piece.offset, piece.length);
      at += piece.length;
    }
    request.gather = {};
  }
  corrupt_copy_[request.length / 2] ^= 0xFF;
  request.local = &corrupt_region_;
  request.local_offset = 0;
  return Status::Ok();
}

void FaultInjectingFabric::InjectLocked(WorkCompletion record) {
  ++counts_.records_injected;
  if (!record.ok()) saw_error_ = true;
  held_.push_back(Held{std::move(record), polls_});
}

void FaultInjectingFabric::LoseEndpointLocked() {
  endpoint_lost_ = true;
  ++counts_.endpoints_lost;
  for (const auto& [request_id, endpoint] : in_flight_) {
    InjectLocked(WorkCompletion::Error(
        request_id, endpoint, FI_ESHUTDOWN,
        ProviderError{0, std::string(kInjected) +
                             "the connection was shut down (FI_SHUTDOWN) before this "
                             "request completed"}));
    lost_.insert(request_id);
  }
  in_flight_.clear();
}

void FaultInjectingFabric::IntakeLocked(WorkCompletion record) {
  if (lost_.erase(record.request_id()) != 0) return;  // already failed by the lost endpoint
  in_flight_.erase(record.request_id());
  auto op = record.operation();
  if (op.ok() && *op == Operation::kRemoteWrite) {
    if (drop_notifications_.count(counts_.notifications++) != 0) {
      ++counts_.notifications_dropped;
      dropped_.notify_all();
      return;
    }
  }
  if (!record.ok()) saw_error_ = true;
  held_.push_back(Held{std::move(record), polls_});
}

Status FaultInjectingFabric::ReadInnerLocked(size_t max) {
  std::vector<WorkCompletion> fresh;
  auto polled = inner_->Poll(fresh, std::min<size_t>(max, 1024));
  if (!polled.ok()) return polled.status();
  for (auto& record : fresh) IntakeLocked(std::move(record));
  return Status::Ok();
}

size_t FaultInjectingFabric::ReleaseLocked(std::vector<WorkCompletion>& out, size_t max) {
  size_t n = 0;
  if (reorder_batch_ > 0) {
    const bool full = held_.size() >= reorder_batch_;
    const bool waited = !held_.empty() && polls_ - held_.front().since_poll >= reorder_max_polls_;
    if (!full && !waited) return 0;
    n = std::min(held_.size(), max);
    std::reverse(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
    if (n >= 2) ++counts_.batches_reordered;
  } else {
    while (n < std::min(held_.size(), max) && polls_ - held_[n].since_poll >= delay_polls_) ++n;
  }
  for (size_t i = 0; i < n; ++i) {
    if (polls_ > held_.front().since_poll) ++counts_.records_delayed;
    out.push_back(std::move(held_.front().record));
    held_.pop_front();
  }
  return n;
}

Result<size_t> FaultInjectingFabric::Poll(std::vector<WorkCompletion>& out, size_t max) {
  MutexLock lock(mu_);
  if (hang_next_poll_) {
    hang_next_poll_ = false;
    hanging_ = true;
    ++counts_.polls_hung;
    lock.Wait(released_, [this]() REQUIRES(mu_) { return !hanging_; });  // lets mu_ go
  }
  if (!poll_failure_.ok()) {
    ++counts_.polls_failed;
    return poll_failure_;
  }
  ++polls_;
  if (++pollers_[std::this_thread::get_id()] == 1) polled_.notify_all();
  WRIT_RETURN_IF_ERROR(ReadInnerLocked(max));
  return ReleaseLocked(out, max);
}

Result<bool> FaultInjectingFabric::PrepareWait(std::vector<pollfd>& fds) {
  {
    MutexLock lock(mu_);
    if (!held_.empty()) {
      fds.clear();
      return false;  // records are due on a later Poll: the caller must poll again
    }
  }
  return inner_->PrepareWait(fds);
}

}  // namespace writ::fabric
