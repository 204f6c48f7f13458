// FabricNode: one side of a libfabric transport (fabric, domain, event queue or
// address vector, endpoints, one completion queue per endpoint), with RMA Write
// and Write-with-data, and WorkCompletions read honestly from every queue.
//
// Thread-safety: every method may be called from any thread; one internal mutex
// serialises endpoint state. Registration goes straight to the (thread-safe) domain.
#pragma once

#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "fabric/completion_level.h"
#include "fabric/event_fd.h"
#include "fabric/fabric_port.h"
#include "fabric/fid.h"
#include "fabric/memory_region.h"
#include "fabric/provider.h"
#include "fabric/request_table.h"
#include "fabric/work_completion.h"
#include "writ/status.h"

namespace writ::fabric {

class FabricNode final : public FabricPort {
 public:
  static Result<std::unique_ptr<FabricNode>> Open(const NodeOptions& options);
  ~FabricNode() override;
  FabricNode(const FabricNode&) = delete;
  FabricNode& operator=(const FabricNode&) = delete;

  // Closes every handle in reverse dependency order; reports the first failure.
  Status Close() override;

  const ProviderInfo& provider() const override { return provider_; }

  // This node's fabric address: the listening address of a MSG target, the endpoint
  // name on RDM. Opaque bytes for the peer (AddPeer) or, on tcp, a sockaddr.
  Result<std::vector<uint8_t>> LocalAddress() override;
  // "127.0.0.1:40123" where the address is a socket address; hex otherwise.
  Result<std::string> LocalAddressText();

  // MSG target: waits for one connection and accepts it.
  Result<Peer> Accept(std::chrono::milliseconds timeout);
  // MSG initiator: connects to the node/service given at Open.
  Result<Peer> Connect(std::chrono::milliseconds timeout) override;
  // RDM: makes a peer's address writable. MSG target: the accepted connection whose peer
  // is at `address` (the initiator's LocalAddress), so its notifications can be told apart.
  Result<Peer> AddPeer(std::span<const uint8_t> address) override;
  // RDM: forgets a peer added with AddPeer. shm keeps at most 256 peers per endpoint
  // (including ones that wrote to it without being added), so a long-running target must
  // remove each sender it added once that sender is done.
  Status RemovePeer(const Peer& peer) override;

  Result<MemoryRegion> Register(void* buffer, size_t length, Access access) override;

  // Posts one write. -FI_EAGAIN is handled by progressing and retrying (records read
  // meanwhile are kept for Poll), never by dropping; a full request table likewise.
  Result<PostedWrite> PostWrite(const WriteRequest& request) override;

  // Reads completion records from every endpoint (and event-queue events) and appends
  // them to `out`, at most `max`. Returns how many were appended.
  Result<size_t> Poll(std::vector<WorkCompletion>& out, size_t max = 64) override;

  // Blocking instead of spinning. Where the provider's completion and event queues have
  // a wait object that wakes on incoming writes (tcp here), PrepareWait returns true and
  // the descriptors to poll for POLLIN once every queue is drained (fi_trywait); false
  // when a queue must be polled again first, or the provider has no such wait objects
  // (then callers keep polling). Any endpoint opened meanwhile raises one of the fds.
  bool can_wait() const override { return wait_objects_; }
  Result<bool> PrepareWait(std::vector<pollfd>& fds) override;

  size_t outstanding() const;
  // Endpoints open now: an accepted connection's is released (after its peer left and
  // nothing of it is in flight) by the Poll that sees it shut down.
  size_t live_endpoints() const;

 private:
  struct Endpoint;
  struct DomainCore;

  explicit FabricNode(NodeOptions options, ProviderInfo provider);
  Status OpenCore();
  Result<Endpoint*> CreateEndpoint(fi_info* info) REQUIRES(mu_);
  Result<std::unique_ptr<Endpoint>> OpenEndpoint(fi_info* info) REQUIRES(mu_);
  Status PostReceives(Endpoint& ep);
  Result<Peer> AcceptedFrom(std::span<const uint8_t> address);
  Status ProcessEventsLocked() REQUIRES(mu_);
  Status HandleEvent(uint32_t event, const fi_eq_cm_entry& entry) REQUIRES(mu_);
  Status PollEndpointLocked(Endpoint& ep, std::vector<WorkCompletion>& out, size_t max)
      REQUIRES(mu_);
  void FailShutDownLocked(Endpoint& ep, std::vector<WorkCompletion>& out) REQUIRES(mu_);
  Status ProgressLocked() REQUIRES(mu_);
  Endpoint* FindLocked(EndpointId id) REQUIRES(mu_);

  NodeOptions options_;
  ProviderInfo provider_;
  std::shared_ptr<DomainCore> core_ GUARDED_BY(mu_);
  Fid<fid_eq> eq_;
  Fid<fid_av> av_;
  Fid<fid_pep> pep_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_ GUARDED_BY(mu_);
  // Records read while progressing inside PostWrite, handed out by the next Poll.
  std::vector<WorkCompletion> backlog_ GUARDED_BY(mu_);
  bool wait_objects_ = false;
  int eq_wait_fd_ = -1;                                    // owned by eq_
  EventFd endpoints_changed_;                              // raised whenever an endpoint is opened
  bool endpoints_changed_raised_ GUARDED_BY(mu_) = false;  // and not drained since
  static constexpr uint32_t kEventsEveryPolls = 32;
  bool last_poll_found_records_ GUARDED_BY(mu_) = false;
  uint32_t polls_since_events_ GUARDED_BY(mu_) = 0;
  std::vector<fid*> wait_fids_ GUARDED_BY(mu_);  // scratch for fi_trywait

  mutable Mutex mu_;
  std::condition_variable connected_cv_;
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace writ::fabric
