// FabricPort: the seam between the delivery state machines and libfabric. It holds
// exactly what the sender (Link, DeliveryRun) and the receiver (Receiver, Connection,
// ProgressLoop) use: connect or add a peer, register memory, post a write, poll its
// records, prepare a blocking wait, and the provider whose completion levels are granted.
//
// Implementations: FabricNode (libfabric itself, opened by OpenFabricNode),
// FaultInjectingFabric (fault_fabric.h), a decorator that replays what providers do
// wrong, and MemoryFabric's ports (memory_fabric.h: no provider, no sockets, one process). Every
// implementation keeps FabricNode's promises: PostWrite never drops a write for -FI_EAGAIN, every
// record a Poll hands out is one WorkCompletion (an error record holding only request id, status,
// endpoint and provider error), and every method may be called from any thread.
#pragma once

#include <poll.h>
#include <rdma/fabric.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/completion_level.h"
#include "fabric/memory_region.h"
#include "fabric/provider.h"
#include "fabric/work_completion.h"
#include "writ/status.h"

namespace writ::fabric {

struct NodeOptions {
  ProviderRequest provider;
  size_t max_outstanding = 64;  // requests in flight per endpoint
  size_t cq_size = 1024;
  size_t posted_receives = 256;  // receives kept posted where FI_RX_CQ_DATA demands them
  std::chrono::milliseconds eagain_timeout{30000};
};

// Where a write goes: the endpoint (connection) and, on RDM, the peer's address.
struct Peer {
  EndpointId endpoint = kNoEndpoint;
  fi_addr_t address = FI_ADDR_UNSPEC;
};

// One piece of a gathered write's source: a range of a registered region.
struct LocalPiece {
  const MemoryRegion* region = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};

inline constexpr size_t kMaxGatherPieces = 8;

struct WriteRequest {
  uint64_t request_id = 0;
  Peer peer;
  const MemoryRegion* local = nullptr;  // registered source
  uint64_t local_offset = 0;
  // When not empty, the source instead: these pieces in order (at most the provider's
  // iov_limit, at most kMaxGatherPieces), lengths adding up to `length`.
  std::span<const LocalPiece> gather;
  uint64_t length = 0;
  // The peer's window. Bounds are the caller's to check: the fabric layer posts what it
  // is given, so tests can show what a provider does with a bad write.
  RegionDescriptor remote;
  uint64_t remote_offset = 0;
  CompletionLevel level = CompletionLevel::kDelivery;
  std::optional<uint32_t> remote_data;  // Write-with-data (write-with-immediate)
};

struct PostedWrite {
  CompletionLevel requested;
  CompletionLevel granted;  // what the provider accepted; recorded as relied upon
};

class FabricPort {
 public:
  virtual ~FabricPort() = default;

  // The provider in use: its name, endpoint kind, key checking, largest message, and the
  // completion levels it grants (ProviderInfo::Grant).
  virtual const ProviderInfo& provider() const = 0;
  EndpointKind kind() const { return provider().kind(); }

  // This side's fabric address: the listening address of a MSG target, the endpoint
  // name on RDM. Opaque bytes for the peer (AddPeer).
  virtual Result<std::vector<uint8_t>> LocalAddress() = 0;
  // MSG initiator: connects to the node/service given at open.
  virtual Result<Peer> Connect(std::chrono::milliseconds timeout) = 0;
  // RDM: makes a peer's address writable, and forgets it again.
  virtual Result<Peer> AddPeer(std::span<const uint8_t> address) = 0;
  virtual Status RemovePeer(const Peer& peer) = 0;

  virtual Result<MemoryRegion> Register(void* buffer, size_t length, Access access) = 0;

  // Posts one write; -FI_EAGAIN and a full request table are handled by progressing and
  // retrying (records read meanwhile are kept for Poll), never by dropping.
  virtual Result<PostedWrite> PostWrite(const WriteRequest& request) = 0;
  // Appends at most `max` records (own writes, peers' notifications) to `out`.
  virtual Result<size_t> Poll(std::vector<WorkCompletion>& out, size_t max = 64) = 0;

  // Blocking instead of spinning: true when the queues have wait objects that wake on
  // incoming records; then PrepareWait fills `fds` (POLLIN) once every queue is drained,
  // or returns false when a queue must be polled again first.
  virtual bool can_wait() const = 0;
  virtual Result<bool> PrepareWait(std::vector<pollfd>& fds) = 0;

  // Closes every handle; later calls fail. Reports the first failure.
  virtual Status Close() = 0;
};

// How a sender or receiver opens its fabric: OpenFabricNode in production; tests pass
// one that wraps the node (FaultInjectingFabric) or MemoryFabric::Opener.
using FabricOpener = std::function<Result<std::unique_ptr<FabricPort>>(const NodeOptions&)>;
Result<std::unique_ptr<FabricPort>> OpenFabricNode(const NodeOptions& options);

}  // namespace writ::fabric
