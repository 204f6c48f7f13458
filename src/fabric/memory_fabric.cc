#include "fabric/memory_fabric.h"

#include <rdma/fi_errno.h>

#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <utility>

#include "common/mutex.h"
#include "fabric/event_fd.h"
#include "fabric/request_table.h"
#include "fabric/write_source.h"

namespace writ::fabric {
namespace {

// A memory port's address: this tag and its number on the fabric.
constexpr uint8_t kMemoryAddressTag[4] = {'w', 'm', 'e', 'm'};
constexpr size_t kMemoryAddressBytes = sizeof kMemoryAddressTag + sizeof(uint32_t);
// Every port is one reliable-datagram endpoint.
constexpr EndpointId kMemoryEndpoint = 0;
// Keys are a counter from here: deterministic, and never 0 (which a test might pass).
constexpr uint64_t kFirstMemoryKey = 0x6d0000;
constexpr int kRemoteAccessError = 10;  // verbs' IBV_WC_REM_ACCESS_ERR, as it reports it

std::vector<uint8_t> MemoryAddressOf(uint32_t port) {
  std::vector<uint8_t> address(kMemoryAddressBytes);
  std::memcpy(address.data(), kMemoryAddressTag, sizeof kMemoryAddressTag);
  std::memcpy(address.data() + sizeof kMemoryAddressTag, &port, sizeof port);
  return address;
}

Result<uint32_t> MemoryPortOf(std::span<const uint8_t> address) {
  if (address.size() != kMemoryAddressBytes ||
      std::memcmp(address.data(), kMemoryAddressTag, sizeof kMemoryAddressTag) != 0) {
    return Status::InvalidArgument("not a memory fabric address (" +
                                   std::to_string(address.size()) + " bytes)");
  }
  uint32_t port = 0;
  std::memcpy(&port, address.data() + sizeof kMemoryAddressTag, sizeof port);
  return port;
}

WorkCompletion AccessError(uint64_t request_id, const std::string& why) {
  return WorkCompletion::Error(request_id, kMemoryEndpoint, FI_EIO,
                               ProviderError{kRemoteAccessError, "remote access error: " + why});
}

}  // namespace

const ProviderInfo& MemoryProviderInfo() {
  static const ProviderInfo info = ProviderInfo::Declared(DeclaredProvider{
      .name = kMemoryProvider,
      .domain = "memory",
      .kind = EndpointKind::kRdm,
      .levels = {CompletionLevel::kInject, CompletionLevel::kTransmit, CompletionLevel::kDelivery},
      .max_message_size = std::numeric_limits<size_t>::max(),
      .iov_limit = 4,
      .tx_depth = 1024,
      .remote_virtual_address = true,
      .names_writers = true,
      .version = FI_VERSION(1, 0)});
  return info;
}

struct MemoryFabric::Hub {
  struct Registration {
    uint32_t port;
    uint8_t* data;
    uint64_t length;
    Access access;
  };
  struct PortState {
    std::deque<WorkCompletion> records;
    std::map<fi_addr_t, uint32_t> peers;      // the address vector: address -> port
    std::map<uint32_t, fi_addr_t> addresses;  // and back, for FI_SOURCE
    fi_addr_t next_address = 0;
    bool open = true;
    bool waiting = false;  // PrepareWait handed out the fd: the next record raises it
    bool raised = false;   // raised and not drained yet
    EventFd wake;
  };

  // Queues `record` for `port` and wakes a waiter.
  void QueueLocked(PortState& port, WorkCompletion record) REQUIRES(mu) {
    port.records.push_back(std::move(record));
    if (port.waiting) {
      port.waiting = false;
      port.raised = true;
      port.wake.Signal();
    }
  }
  // The target's verdict on a write of `length` bytes at `address` with `key`.
  Result<uint8_t*> TargetLocked(uint32_t target, uint64_t key, uint64_t address, uint64_t length)
      REQUIRES(mu);

  Mutex mu;
  std::condition_variable notifications_read;  // counts.notifications_read went up
  std::map<uint32_t, PortState> ports GUARDED_BY(mu);
  std::map<uint64_t, Registration> regions GUARDED_BY(mu);
  uint32_t next_port GUARDED_BY(mu) = 1;
  uint64_t next_key GUARDED_BY(mu) = kFirstMemoryKey;
  MemoryFabricCounts counts GUARDED_BY(mu);
};

Result<uint8_t*> MemoryFabric::Hub::TargetLocked(uint32_t target, uint64_t key, uint64_t address,
                                                 uint64_t length) {
  auto it = regions.find(key);
  if (it == regions.end() || it->second.port != target) {
    return Status::Refused("key " + std::to_string(key) + " is not registered at the target");
  }
  const Registration& region = it->second;
  if (region.access != Access::kRemoteWrite) {
    return Status::Refused("key " + std::to_string(key) + " is not remotely writable");
  }
  const uint64_t base = reinterpret_cast<uint64_t>(region.data);
  if (address < base || address - base > region.length ||
      length > region.length - (address - base)) {
    return Status::Refused(std::to_string(length) + " bytes at offset " +
                           std::to_string(address - base) + " lie outside the region of " +
                           std::to_string(region.length) + " bytes");
  }
  return region.data + (address - base);
}

namespace {

// Revokes its registration when it goes: later writes with its key fail.
class MemoryLease final : public RegionLease {
 public:
  MemoryLease(std::shared_ptr<MemoryFabric::Hub> hub, uint64_t key)
      : hub_(std::move(hub)), key_(key) {}
  ~MemoryLease() override {
    MutexLock lock(hub_->mu);
    hub_->regions.erase(key_);
  }

 private:
  std::shared_ptr<MemoryFabric::Hub> hub_;
  uint64_t key_;
};

}  // namespace

class MemoryPort final : public FabricPort {
 public:
  MemoryPort(std::shared_ptr<MemoryFabric::Hub> hub, uint32_t id) : hub_(std::move(hub)), id_(id) {}
  ~MemoryPort() override {
    MutexLock lock(hub_->mu);
    hub_->ports.erase(id_);
  }

  const ProviderInfo& provider() const override { return MemoryProviderInfo(); }
  Result<std::vector<uint8_t>> LocalAddress() override { return MemoryAddressOf(id_); }
  Result<Peer> Connect(std::chrono::milliseconds) override {
    return Status::Unsupported("the memory fabric has reliable-datagram ports only (AddPeer)");
  }
  Result<Peer> AddPeer(std::span<const uint8_t> address) override;
  Status RemovePeer(const Peer& peer) override;
  Result<MemoryRegion> Register(void* buffer, size_t length, Access access) override;
  Result<PostedWrite> PostWrite(const WriteRequest& request) override;
  Result<size_t> Poll(std::vector<WorkCompletion>& out, size_t max) override;
  bool can_wait() const override { return true; }
  Result<bool> PrepareWait(std::vector<pollfd>& fds) override;
  Status Close() override;

 private:
  MemoryFabric::Hub::PortState* SelfLocked() REQUIRES(hub_->mu) {
    auto it = hub_->ports.find(id_);
    return it == hub_->ports.end() || !it->second.open ? nullptr : &it->second;
  }
  // Places the write at `target` (or refuses it) and queues both sides' records.
  void DeliverLocked(MemoryFabric::Hub::PortState& self, uint32_t target,
                     const WriteRequest& request, const WriteSource& source) REQUIRES(hub_->mu);

  std::shared_ptr<MemoryFabric::Hub> hub_;
  const uint32_t id_;
};

Result<Peer> MemoryPort::AddPeer(std::span<const uint8_t> address) {
  WRIT_ASSIGN_OR_RETURN(const uint32_t port, MemoryPortOf(address));
  MutexLock lock(hub_->mu);
  auto* self = SelfLocked();
  if (self == nullptr) return Status::InvalidArgument("memory port is closed");
  auto peer = hub_->ports.find(port);
  if (peer == hub_->ports.end() || !peer->second.open) {
    return Status::InvalidArgument("no open memory port at address " + std::to_string(port));
  }
  if (auto known = self->addresses.find(port); known != self->addresses.end()) {
    return Peer{kMemoryEndpoint, known->second};
  }
  const fi_addr_t fi_addr = self->next_address++;
  self->peers[fi_addr] = port;
  self->addresses[port] = fi_addr;
  return Peer{kMemoryEndpoint, fi_addr};
}

Status MemoryPort::RemovePeer(const Peer& peer) {
  MutexLock lock(hub_->mu);
  auto* self = SelfLocked();
  if (self == nullptr) return Status::InvalidArgument("memory port is closed");
  auto it = self->peers.find(peer.address);
  if (it == self->peers.end()) return Status::InvalidArgument("peer not in the address vector");
  self->addresses.erase(it->second);
  self->peers.erase(it);
  return Status::Ok();
}

Result<MemoryRegion> MemoryPort::Register(void* buffer, size_t length, Access access) {
  if (buffer == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory range");
  }
  MutexLock lock(hub_->mu);
  if (SelfLocked() == nullptr) return Status::InvalidArgument("memory port is closed");
  const uint64_t key = hub_->next_key++;
  hub_->regions[key] =
      MemoryFabric::Hub::Registration{id_, static_cast<uint8_t*>(buffer), length, access};
  ++hub_->counts.registrations;
  MemoryRegion region;
  region.lease_ = std::make_unique<MemoryLease>(hub_, key);
  region.data_ = static_cast<uint8_t*>(buffer);
  region.length_ = length;
  region.key_ = key;
  region.descriptor_ = RegionDescriptor{reinterpret_cast<uint64_t>(buffer), key, length};
  return region;
}

Result<PostedWrite> MemoryPort::PostWrite(const WriteRequest& request) {
  WRIT_ASSIGN_OR_RETURN(const WriteSource source,
                        CheckedWriteSource(request, provider().iov_limit()));
  MutexLock lock(hub_->mu);
  auto* self = SelfLocked();
  if (self == nullptr) return Status::Transport("memory port is closed");
  if (request.peer.endpoint != kMemoryEndpoint)
    return Status::InvalidArgument("write to an unknown endpoint");
  auto peer = self->peers.find(request.peer.address);
  if (peer == self->peers.end()) {
    return Status::InvalidArgument("write to an address not in this port's address vector");
  }
  ++hub_->counts.writes;
  DeliverLocked(*self, peer->second, request, source);
  return PostedWrite{request.level, provider().Grant(request.level)};
}

void MemoryPort::DeliverLocked(MemoryFabric::Hub::PortState& self, uint32_t target,
                               const WriteRequest& request, const WriteSource& source) {
  auto to = hub_->ports.find(target);
  if (to == hub_->ports.end() || !to->second.open) {
    hub_->QueueLocked(self, WorkCompletion::Error(request.request_id, kMemoryEndpoint, FI_ENOTCONN,
                                                  ProviderError{0, "the target port is closed"}));
    return;
  }
  auto placed = hub_->TargetLocked(target, request.remote.key,
                                   request.remote.base + request.remote_offset, request.length);
  if (!placed.ok()) {
    ++hub_->counts.access_errors;
    hub_->QueueLocked(self, AccessError(request.request_id, placed.status().message()));
    return;
  }
  uint8_t* at = *placed;
  for (const SourcePiece& piece : source) {
    std::memcpy(at, piece.data, piece.length);
    at += piece.length;
  }
  hub_->counts.bytes_placed += request.length;
  if (request.remote_data) {
    const auto writer = to->second.addresses.find(id_);
    WorkCompletion::SuccessFields notified{
        Operation::kRemoteWrite, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, std::nullopt,
        *request.remote_data,
        writer == to->second.addresses.end() ? FI_ADDR_NOTAVAIL : writer->second};
    ++hub_->counts.notifications;
    hub_->QueueLocked(to->second, WorkCompletion::Success(kNoRequest, kMemoryEndpoint, notified));
  }
  hub_->QueueLocked(self, WorkCompletion::Success(request.request_id, kMemoryEndpoint,
                                                  {Operation::kWrite, FI_RMA | FI_WRITE,
                                                   std::nullopt, std::nullopt, FI_ADDR_UNSPEC}));
}

Result<size_t> MemoryPort::Poll(std::vector<WorkCompletion>& out, size_t max) {
  MutexLock lock(hub_->mu);
  auto* self = SelfLocked();
  if (self == nullptr) return size_t{0};
  const size_t n = std::min(max, self->records.size());
  uint64_t notifications = 0;
  for (size_t i = 0; i < n; ++i) {
    notifications += self->records.front().request_id() == kNoRequest;
    out.push_back(std::move(self->records.front()));
    self->records.pop_front();
  }
  if (notifications > 0) {
    hub_->counts.notifications_read += notifications;
    hub_->notifications_read.notify_all();
  }
  return n;
}

Result<bool> MemoryPort::PrepareWait(std::vector<pollfd>& fds) {
  fds.clear();
  MutexLock lock(hub_->mu);
  auto* self = SelfLocked();
  if (self == nullptr || !self->records.empty()) return false;
  if (self->raised) {
    self->wake.Drain();
    self->raised = false;
  }
  self->waiting = true;
  fds.push_back({self->wake.fd(), POLLIN, 0});
  return true;
}

Status MemoryPort::Close() {
  MutexLock lock(hub_->mu);
  auto it = hub_->ports.find(id_);
  if (it == hub_->ports.end() || !it->second.open) return Status::Ok();
  it->second.open = false;
  it->second.records.clear();
  // A thread blocked on the fd sees the close.
  it->second.wake.Signal();
  return Status::Ok();
}

MemoryFabric::MemoryFabric() : hub_(std::make_shared<Hub>()) {}
MemoryFabric::~MemoryFabric() = default;

Result<std::unique_ptr<FabricPort>> MemoryFabric::Open(const NodeOptions& options) {
  return OpenOn(hub_, options);
}

Result<std::unique_ptr<FabricPort>> MemoryFabric::OpenOn(const std::shared_ptr<Hub>& hub,
                                                         const NodeOptions& options) {
  if (options.max_outstanding == 0 || options.cq_size == 0) {
    return Status::InvalidArgument("memory port: max_outstanding and cq_size must be positive");
  }
  WRIT_ASSIGN_OR_RETURN(EventFd wake, EventFd::Create());
  MutexLock lock(hub->mu);
  const uint32_t id = hub->next_port++;
  Hub::PortState& state = hub->ports[id];
  state.wake = std::move(wake);
  ++hub->counts.ports;
  return std::unique_ptr<FabricPort>(new MemoryPort(hub, id));
}

FabricOpener MemoryFabric::Opener() {
  return [hub = hub_](const NodeOptions& options) -> Result<std::unique_ptr<FabricPort>> {
    return OpenOn(hub, options);
  };
}

MemoryFabricCounts MemoryFabric::counts() const {
  MutexLock lock(hub_->mu);
  return hub_->counts;
}

bool MemoryFabric::AwaitNotificationsRead(uint64_t n, std::chrono::milliseconds timeout) const {
  MutexLock lock(hub_->mu);
  return lock.WaitFor(hub_->notifications_read, timeout,
                      [&]() REQUIRES(hub_->mu) { return hub_->counts.notifications_read >= n; });
}

}  // namespace writ::fabric
