#include "fabric/node.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "fabric/registration_count.h"
#include "fabric/write_source.h"

namespace writ::fabric {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kCqBatch = 16;

Result<uint64_t> RandomKey(size_t key_size) {
  uint64_t key = 0;
  if (getrandom(&key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) {
    return Status::Io("getrandom failed for a memory key", errno);
  }
  if (key_size > 0 && key_size < sizeof key) key &= (uint64_t{1} << (8 * key_size)) - 1;
  return key;
}

std::string Hex(std::span<const uint8_t> bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace

struct FabricNode::DomainCore {
  Fid<fid_fabric> fabric;  // declared first: closed last
  Fid<fid_domain> domain;

  Status Close() {
    CloseCollector closes;
    closes.Add(domain.Close("domain"));
    closes.Add(fabric.Close("fabric"));
    return closes.Take();
  }
};

struct FabricNode::Endpoint {
  Endpoint(EndpointId id_in, size_t outstanding, size_t receive_slots)
      : id(id_in), requests(outstanding), receives(receive_slots) {}

  EndpointId id;
  Fid<fid_cq> cq;  // declared before ep: the endpoint closes first
  Fid<fid_ep> ep;
  RequestTable requests;
  RequestTable receives;
  bool connected = false;   // MSG: FI_CONNECTED seen. RDM: always.
  bool handed_out = false;  // returned by Accept()
  bool shut_down = false;   // FI_SHUTDOWN seen
  bool accepted = false;    // created for a peer's connection request (a target's)
  std::optional<Status> connect_error;
  int cq_wait_fd = -1;  // owned by cq; -1 without wait objects
};

FabricNode::FabricNode(NodeOptions options, ProviderInfo provider)
    : options_(std::move(options)), provider_(std::move(provider)) {}

FabricNode::~FabricNode() { (void)Close(); }

Result<std::unique_ptr<FabricNode>> FabricNode::Open(const NodeOptions& options) {
  if (options.max_outstanding == 0 || options.cq_size == 0) {
    return Status::InvalidArgument("fabric node: max_outstanding and cq_size must be positive");
  }
  WRIT_ASSIGN_OR_RETURN(ProviderInfo provider, ProviderInfo::Discover(options.provider));
  std::unique_ptr<FabricNode> node(new FabricNode(options, std::move(provider)));
  node->options_.provider.provider = node->provider_.name();
  WRIT_RETURN_IF_ERROR(node->OpenCore());
  return node;
}

Status FabricNode::OpenCore() {
  fi_info* info = const_cast<fi_info*>(provider_.info());
  MutexLock lock(mu_);  // not shared yet: held for the analysis's sake
  core_ = std::make_shared<DomainCore>();
  WRIT_ASSIGN_OR_RETURN(const LibfabricApi* api, Libfabric());
  int rc = api->fabric(info->fabric_attr, core_->fabric.out(), nullptr);
  if (rc != 0) return FabricStatus(rc, "fi_fabric");

  if (provider_.completion_fd_wakes_on_writes()) {
    auto changed = EventFd::Create();
    if (changed.ok()) {
      endpoints_changed_ = std::move(changed).value();
      wait_objects_ = true;
    }
  }
  if (kind() == EndpointKind::kMsg) {
    fi_eq_attr eq_attr{};
    eq_attr.size = 64;
    eq_attr.wait_obj = wait_objects_ ? FI_WAIT_FD : FI_WAIT_UNSPEC;
    rc = fi_eq_open(core_->fabric.get(), &eq_attr, eq_.out(), nullptr);
    if (rc != 0) return FabricStatus(rc, "fi_eq_open");
    if (wait_objects_) {
      rc = fi_control(&eq_.get()->fid, FI_GETWAIT, &eq_wait_fd_);
      if (rc != 0) return FabricStatus(rc, "fi_control(event queue, FI_GETWAIT)");
    }
  }
  rc = fi_domain(core_->fabric.get(), info, core_->domain.out(), nullptr);
  if (rc != 0) return FabricStatus(rc, "fi_domain");

  if (kind() == EndpointKind::kRdm) {
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    rc = fi_av_open(core_->domain.get(), &av_attr, av_.out(), nullptr);
    if (rc != 0) return FabricStatus(rc, "fi_av_open");
    auto ep = CreateEndpoint(info);
    if (!ep.ok()) return ep.status();
    (*ep)->connected = true;
    return Status::Ok();
  }
  if (options_.provider.role == Role::kTarget) {
    rc = fi_passive_ep(core_->fabric.get(), info, pep_.out(), nullptr);
    if (rc != 0) return FabricStatus(rc, "fi_passive_ep");
    rc = fi_pep_bind(pep_.get(), &eq_.get()->fid, 0);
    if (rc != 0) return FabricStatus(rc, "fi_pep_bind");
    rc = fi_listen(pep_.get());
    if (rc != 0) return FabricStatus(rc, "fi_listen");
  }
  return Status::Ok();
}

Result<FabricNode::Endpoint*> FabricNode::CreateEndpoint(fi_info* info) {
  // libfabric 1.17 shm names its region "<pid>:<domain>:<endpoint>" in /dev/shm. A region
  // left by a process that was killed, whose pid this process now has, makes fi_enable
  // fail with FI_EBUSY ("shm file in use") after libfabric has unlinked it; the next
  // endpoint gets a fresh name. One retry covers exactly that case.
  const int attempts = provider_.name() == "shm" ? 2 : 1;
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto ep = OpenEndpoint(info);
    if (ep.ok()) {
      WRIT_RETURN_IF_ERROR(PostReceives(**ep));
      endpoints_.push_back(std::move(*ep));
      endpoints_changed_.Signal();
      endpoints_changed_raised_ = true;
      return endpoints_.back().get();
    }
    last = ep.status();
    if (last.fi_errno() != FI_EBUSY) break;
  }
  return last;
}

Result<std::unique_ptr<FabricNode::Endpoint>> FabricNode::OpenEndpoint(fi_info* info) {
  const size_t receive_slots =
      provider_.needs_posted_receives_for_data() ? options_.posted_receives : 0;
  auto ep = std::make_unique<Endpoint>(static_cast<EndpointId>(endpoints_.size()),
                                       options_.max_outstanding, receive_slots);
  fi_cq_attr cq_attr{};
  cq_attr.size = options_.cq_size;
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = wait_objects_ ? FI_WAIT_FD : FI_WAIT_NONE;
  int rc = fi_cq_open(core_->domain.get(), &cq_attr, ep->cq.out(), nullptr);
  if (rc != 0) return FabricStatus(rc, "fi_cq_open");
  if (wait_objects_) {
    rc = fi_control(&ep->cq.get()->fid, FI_GETWAIT, &ep->cq_wait_fd);
    if (rc != 0) return FabricStatus(rc, "fi_control(completion queue, FI_GETWAIT)");
  }
  rc = fi_endpoint(core_->domain.get(), info, ep->ep.out(), nullptr);
  if (rc != 0) return FabricStatus(rc, "fi_endpoint");
  if (eq_) {
    rc = fi_ep_bind(ep->ep.get(), &eq_.get()->fid, 0);
    if (rc != 0) return FabricStatus(rc, "fi_ep_bind(event queue)");
  }
  if (av_) {
    rc = fi_ep_bind(ep->ep.get(), &av_.get()->fid, 0);
    if (rc != 0) return FabricStatus(rc, "fi_ep_bind(address vector)");
  }
  rc = fi_ep_bind(ep->ep.get(), &ep->cq.get()->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) return FabricStatus(rc, "fi_ep_bind(completion queue)");
  rc = fi_enable(ep->ep.get());
  if (rc != 0) return FabricStatus(rc, "fi_enable");
  return ep;
}

// Where the provider demands it (FI_RX_CQ_DATA, e.g. verbs), every write-with-data
// consumes a posted receive at the target; keep them all posted.
Status FabricNode::PostReceives(Endpoint& ep) {
  while (RequestSlot* slot = ep.receives.Acquire(kNoRequest, /*is_receive=*/true)) {
    const ssize_t rc = fi_recv(ep.ep.get(), nullptr, 0, nullptr, FI_ADDR_UNSPEC, &slot->context);
    if (rc != 0) {
      ep.receives.Release(slot);
      return FabricStatus(rc, "fi_recv (receive for remote CQ data)");
    }
  }
  return Status::Ok();
}

Status FabricNode::Close() {
  MutexLock lock(mu_);
  if (closed_) return Status::Ok();
  closed_ = true;
  CloseCollector closes;
  for (auto it = endpoints_.rbegin(); it != endpoints_.rend(); ++it) {
    if (!*it) continue;  // retired
    closes.Add((*it)->ep.Close("endpoint"));
    closes.Add((*it)->cq.Close("completion queue"));
  }
  endpoints_.clear();
  closes.Add(pep_.Close("passive endpoint"));
  closes.Add(av_.Close("address vector"));
  closes.Add(eq_.Close("event queue"));
  // Registrations still alive keep the domain open; it closes with the last of them.
  if (core_ && core_.use_count() == 1) closes.Add(core_->Close());
  core_.reset();
  return closes.Take();
}

Result<std::vector<uint8_t>> FabricNode::LocalAddress() {
  MutexLock lock(mu_);
  fid_t fid = nullptr;
  if (pep_) {
    fid = pep_.fid();
  } else if (!endpoints_.empty()) {
    // RDM: the endpoint's name. A connected MSG initiator: its end of the connection, which
    // the target finds its accepted endpoint by (AddPeer).
    fid = endpoints_.front()->ep.fid();
  } else {
    return Status::InvalidArgument("a MSG initiator has no address before it connects");
  }
  std::vector<uint8_t> address(128);
  size_t len = address.size();
  int rc = fi_getname(fid, address.data(), &len);
  if (rc == -FI_ETOOSMALL) {
    address.resize(len);
    rc = fi_getname(fid, address.data(), &len);
  }
  if (rc != 0) return FabricStatus(rc, "fi_getname");
  address.resize(len);
  return address;
}

Result<std::string> FabricNode::LocalAddressText() {
  WRIT_ASSIGN_OR_RETURN(std::vector<uint8_t> address, LocalAddress());
  if (address.size() == sizeof(sockaddr_in)) {
    sockaddr_in sin;
    std::memcpy(&sin, address.data(), sizeof sin);
    if (sin.sin_family == AF_INET) {
      char host[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &sin.sin_addr, host, sizeof host);
      return std::string(host) + ":" + std::to_string(ntohs(sin.sin_port));
    }
  }
  return Hex(address);
}

FabricNode::Endpoint* FabricNode::FindLocked(EndpointId id) {
  return id < endpoints_.size() ? endpoints_[id].get() : nullptr;
}

Status FabricNode::HandleEvent(uint32_t event, const fi_eq_cm_entry& entry) {
  if (event == FI_CONNREQ) {
    InfoPtr info(entry.info);
    auto created = CreateEndpoint(info.get());
    if (!created.ok()) {
      (void)fi_reject(pep_.get(), info->handle, nullptr, 0);
      return created.status().Annotate("accepting a connection");
    }
    (*created)->accepted = true;
    const int rc = fi_accept((*created)->ep.get(), nullptr, 0);
    if (rc != 0) {
      (*created)->shut_down = true;
      return FabricStatus(rc, "fi_accept");
    }
    return Status::Ok();
  }
  for (auto& ep : endpoints_) {
    if (!ep || ep->ep.fid() != entry.fid) continue;
    if (event == FI_CONNECTED) {
      ep->connected = true;
      connected_cv_.notify_all();
    } else if (event == FI_SHUTDOWN) {
      ep->shut_down = true;
    }
  }
  return Status::Ok();
}

Status FabricNode::ProcessEventsLocked() {
  if (!eq_) return Status::Ok();
  for (;;) {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    const ssize_t rc = fi_eq_read(eq_.get(), &event, &entry, sizeof entry, 0);
    if (rc == -FI_EAGAIN) return Status::Ok();
    if (rc == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      if (fi_eq_readerr(eq_.get(), &err, 0) < 0) return Status::Transport("fi_eq_readerr failed");
      for (auto& ep : endpoints_) {
        if (ep && ep->ep.fid() == err.fid) {
          ep->shut_down = true;
          ep->connect_error = FabricStatus(-err.err, "connection");
        }
      }
      if (err.err == FI_ECONNREFUSED || err.fid == pep_.fid()) continue;
      continue;
    }
    if (rc < 0) return FabricStatus(rc, "fi_eq_read");
    WRIT_RETURN_IF_ERROR(HandleEvent(event, entry));
  }
}

Result<Peer> FabricNode::Accept(std::chrono::milliseconds timeout) {
  if (!pep_) return Status::InvalidArgument("Accept needs a MSG target node");
  const auto deadline = Clock::now() + timeout;
  MutexLock lock(mu_);
  for (;;) {
    WRIT_RETURN_IF_ERROR(ProcessEventsLocked());
    for (auto& ep : endpoints_) {
      if (ep && ep->connected && !ep->handed_out) {
        ep->handed_out = true;
        return Peer{ep->id, FI_ADDR_UNSPEC};
      }
    }
    if (Clock::now() >= deadline) return Status::Timeout("no connection within the timeout");
    // Events arrive through fi_eq_read only; check again shortly.
    lock.WaitFor(connected_cv_, std::chrono::milliseconds(1));
  }
}

Result<Peer> FabricNode::Connect(std::chrono::milliseconds timeout) {
  if (kind() != EndpointKind::kMsg || pep_) {
    return Status::InvalidArgument("Connect needs a MSG initiator node");
  }
  MutexLock lock(mu_);
  fi_info* info = const_cast<fi_info*>(provider_.info());
  WRIT_ASSIGN_OR_RETURN(Endpoint * ep, CreateEndpoint(info));
  const int rc = fi_connect(ep->ep.get(), info->dest_addr, nullptr, 0);
  if (rc != 0) return FabricStatus(rc, "fi_connect");
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    WRIT_RETURN_IF_ERROR(ProcessEventsLocked());
    if (ep->connected) return Peer{ep->id, FI_ADDR_UNSPEC};
    if (ep->connect_error) return *ep->connect_error;
    if (ep->shut_down) return Status::Transport("connection shut down while connecting");
    if (Clock::now() >= deadline) return Status::Timeout("connect: no answer within the timeout");
    lock.WaitFor(connected_cv_, std::chrono::milliseconds(1));
  }
}

Result<Peer> FabricNode::AddPeer(std::span<const uint8_t> address) {
  if (pep_) return AcceptedFrom(address);
  if (!av_) return Status::InvalidArgument("AddPeer needs an RDM node or a MSG target");
  // fi_av_insert takes no length: it reads a string up to its NUL, or addrlen bytes.
  // The address comes from the peer, so it must hold what the provider will read.
  const fi_info* info = provider_.info();
  if (info->addr_format == FI_ADDR_STR) {
    if (std::find(address.begin(), address.end(), uint8_t{0}) == address.end()) {
      return Status::InvalidArgument("fabric address is not a NUL-terminated string");
    }
  } else if (address.size() < info->src_addrlen) {
    return Status::InvalidArgument("fabric address of " + std::to_string(address.size()) +
                                   " bytes is shorter than the provider's " +
                                   std::to_string(info->src_addrlen));
  }
  MutexLock lock(mu_);
  fi_addr_t fi_addr = FI_ADDR_UNSPEC;
  const int rc = fi_av_insert(av_.get(), address.data(), 1, &fi_addr, 0, nullptr);
  if (rc != 1) return FabricStatus(rc < 0 ? rc : -FI_EADDRNOTAVAIL, "fi_av_insert");
  return Peer{endpoints_.front()->id, fi_addr};
}

// MSG target: the accepted connection whose peer's end is `address` (its endpoint is
// released once the peer leaves, so there is nothing to remove).
Result<Peer> FabricNode::AcceptedFrom(std::span<const uint8_t> address) {
  MutexLock lock(mu_);
  WRIT_RETURN_IF_ERROR(ProcessEventsLocked());
  for (auto& ep : endpoints_) {
    if (!ep || !ep->accepted || ep->shut_down) continue;
    std::vector<uint8_t> peer(128);
    size_t len = peer.size();
    if (fi_getpeer(ep->ep.get(), peer.data(), &len) != 0) continue;
    peer.resize(len);
    if (std::equal(peer.begin(), peer.end(), address.begin(), address.end())) {
      return Peer{ep->id, FI_ADDR_UNSPEC};
    }
  }
  return Status::NotFound("no fabric connection from the sender's address was accepted");
}

Status FabricNode::RemovePeer(const Peer& peer) {
  if (pep_) return Status::Ok();
  if (!av_) return Status::InvalidArgument("RemovePeer needs an RDM node or a MSG target");
  MutexLock lock(mu_);
  fi_addr_t address = peer.address;
  const int rc = fi_av_remove(av_.get(), &address, 1, 0);
  if (rc != 0) return FabricStatus(rc, "fi_av_remove");
  return Status::Ok();
}

Result<MemoryRegion> FabricNode::Register(void* buffer, size_t length, Access access) {
  if (buffer == nullptr || length == 0) {
    return Status::InvalidArgument("cannot register an empty memory range");
  }
  std::shared_ptr<DomainCore> core;
  {
    MutexLock lock(mu_);
    if (!core_) return Status::InvalidArgument("fabric node is closed");
    core = core_;
  }
  const uint64_t access_flags =
      access == Access::kRemoteWrite ? FI_REMOTE_WRITE : (FI_WRITE | FI_SEND);
  MemoryRegion region;
  int rc = -FI_ENOKEY;
  for (int attempt = 0; attempt < 8 && rc == -FI_ENOKEY; ++attempt) {
    uint64_t requested_key = 0;
    if (!provider_.provider_keys()) {
      WRIT_ASSIGN_OR_RETURN(requested_key, RandomKey(provider_.info()->domain_attr->mr_key_size));
    }
    rc = fi_mr_reg(core->domain.get(), buffer, length, access_flags, 0, requested_key, 0,
                   region.mr_.out(), nullptr);
  }
  if (rc != 0) return FabricStatus(rc, "fi_mr_reg");
  CountRegistration();
  region.domain_keepalive_ = core;
  region.data_ = static_cast<uint8_t*>(buffer);
  region.length_ = length;
  region.key_ = fi_mr_key(region.mr_.get());
  region.desc_ = fi_mr_desc(region.mr_.get());
  region.descriptor_.base =
      provider_.remote_virtual_address() ? reinterpret_cast<uint64_t>(buffer) : 0;
  region.descriptor_.key = region.key_;
  region.descriptor_.length = length;
  return region;
}

namespace {

// A write's local source as libfabric takes it: one iovec, or the gathered pieces.
struct LocalIov {
  iovec iov[kMaxGatherPieces];
  void* desc[kMaxGatherPieces];
  size_t count = 0;
};

Result<LocalIov> LocalIovOf(const WriteRequest& request, size_t iov_limit) {
  WRIT_ASSIGN_OR_RETURN(const WriteSource source, CheckedWriteSource(request, iov_limit));
  LocalIov out;
  for (const SourcePiece& piece : source) {
    out.iov[out.count] = iovec{piece.data, piece.length};
    out.desc[out.count] = piece.region->desc();
    ++out.count;
  }
  return out;
}

}  // namespace

Result<PostedWrite> FabricNode::PostWrite(const WriteRequest& request) {
  WRIT_ASSIGN_OR_RETURN(LocalIov local, LocalIovOf(request, provider_.iov_limit()));
  MutexLock lock(mu_);
  Endpoint* ep = FindLocked(request.peer.endpoint);
  if (ep == nullptr) return Status::InvalidArgument("write to an unknown endpoint");
  const auto deadline = Clock::now() + options_.eagain_timeout;

  RequestSlot* slot = nullptr;
  while ((slot = ep->requests.Acquire(request.request_id)) == nullptr) {
    WRIT_RETURN_IF_ERROR(ProgressLocked());
    if (ep->shut_down) return Status::Transport("endpoint was shut down (FI_SHUTDOWN)");
    if (Clock::now() >= deadline) return Status::Timeout("no request slot freed in time");
  }
  if (ep->shut_down || !ep->connected) {
    ep->requests.Release(slot);
    return Status::Transport(ep->shut_down ? "endpoint was shut down (FI_SHUTDOWN)"
                                           : "endpoint is not connected");
  }

  const CompletionLevel granted = provider_.Grant(request.level);
  fi_rma_iov rma_iov{request.remote.base + request.remote_offset, request.length,
                     request.remote.key};
  fi_msg_rma msg{};
  msg.msg_iov = local.iov;
  msg.desc = local.desc;
  msg.iov_count = local.count;
  msg.addr = request.peer.address;
  msg.rma_iov = &rma_iov;
  msg.rma_iov_count = 1;
  msg.context = &slot->context;
  msg.data = request.remote_data.value_or(0);
  const uint64_t flags =
      FI_COMPLETION | CompletionLevelFlag(granted) | (request.remote_data ? FI_REMOTE_CQ_DATA : 0);
  for (;;) {
    const ssize_t rc = fi_writemsg(ep->ep.get(), &msg, flags);
    if (rc == 0) break;
    if (rc != -FI_EAGAIN) {
      ep->requests.Release(slot);
      return FabricStatus(rc, "fi_writemsg");
    }
    const Status progressed = ProgressLocked();
    if (!progressed.ok() || ep->shut_down || Clock::now() >= deadline) {
      ep->requests.Release(slot);
      if (!progressed.ok()) return progressed;
      if (ep->shut_down) return Status::Transport("endpoint was shut down (FI_SHUTDOWN)");
      return Status::Timeout("fi_writemsg kept returning FI_EAGAIN");
    }
  }
  return PostedWrite{request.level, granted};
}

Status FabricNode::ProgressLocked() {
  WRIT_RETURN_IF_ERROR(ProcessEventsLocked());
  for (auto& ep : endpoints_) {
    if (ep) WRIT_RETURN_IF_ERROR(PollEndpointLocked(*ep, backlog_, SIZE_MAX));
  }
  return Status::Ok();
}

Result<bool> FabricNode::PrepareWait(std::vector<pollfd>& fds) {
  fds.clear();
  MutexLock lock(mu_);
  if (!wait_objects_ || closed_ || !backlog_.empty()) return false;
  // Drained under the lock endpoints are opened under: an endpoint opened after this
  // raises it again and so wakes the caller, which then waits on the new set. Read only
  // when raised: a read of an eventfd nobody raised is a system call per wait for nothing.
  if (endpoints_changed_raised_) endpoints_changed_.Drain();
  endpoints_changed_raised_ = false;
  wait_fids_.clear();
  for (const auto& ep : endpoints_) {
    if (!ep) continue;
    wait_fids_.push_back(&ep->cq.get()->fid);
    fds.push_back({ep->cq_wait_fd, POLLIN, 0});
  }
  if (eq_) {
    wait_fids_.push_back(&eq_.get()->fid);
    fds.push_back({eq_wait_fd_, POLLIN, 0});
  }
  if (!wait_fids_.empty()) {
    const int rc =
        fi_trywait(core_->fabric.get(), wait_fids_.data(), static_cast<int>(wait_fids_.size()));
    if (rc == -FI_EAGAIN) {
      fds.clear();
      return false;
    }
    if (rc != 0) return FabricStatus(rc, "fi_trywait");
  }
  fds.push_back({endpoints_changed_.fd(), POLLIN, 0});
  return true;
}

Result<size_t> FabricNode::Poll(std::vector<WorkCompletion>& out, size_t max) {
  MutexLock lock(mu_);
  const size_t before = out.size();
  // The event queue holds connection events only, and reading it is a round of provider
  // progress (on tcp a system call). While completions flow it is read every
  // kEventsEveryPolls-th poll; after a poll that found none, at once (a peer that went
  // away shows first as completions that stop).
  if (!last_poll_found_records_ || ++polls_since_events_ >= kEventsEveryPolls) {
    polls_since_events_ = 0;
    WRIT_RETURN_IF_ERROR(ProcessEventsLocked());
  }
  const size_t from_backlog = std::min(max, backlog_.size());
  std::move(backlog_.begin(), backlog_.begin() + from_backlog, std::back_inserter(out));
  backlog_.erase(backlog_.begin(), backlog_.begin() + from_backlog);
  for (auto& ep : endpoints_) {
    if (!ep) continue;
    const size_t appended = out.size() - before;
    if (appended < max) WRIT_RETURN_IF_ERROR(PollEndpointLocked(*ep, out, max - appended));
    if (ep->shut_down) {
      FailShutDownLocked(*ep, out);
      // An accepted connection whose peer went away: release its endpoint and completion
      // queue (a socket, memory) once nothing of it is in flight, and stop polling it, or
      // a long-running target slows down and runs out of descriptors with every sender
      // that ever connected. Its id is never reused.
      if (ep->accepted && ep->requests.in_flight() == 0) {
        (void)ep->ep.Close("endpoint");
        (void)ep->cq.Close("completion queue");
        ep.reset();
      }
    }
  }
  last_poll_found_records_ = out.size() > before;
  return out.size() - before;
}

Status FabricNode::PollEndpointLocked(Endpoint& ep, std::vector<WorkCompletion>& out, size_t max) {
  fi_cq_data_entry entries[kCqBatch];
  fi_addr_t sources[kCqBatch];
  const bool rdm = provider_.names_writers();
  size_t appended = 0;
  while (appended < max) {
    const size_t batch = std::min(kCqBatch, max - appended);
    const ssize_t n = rdm ? fi_cq_readfrom(ep.cq.get(), entries, batch, sources)
                          : fi_cq_read(ep.cq.get(), entries, batch);
    if (n == -FI_EAGAIN) return Status::Ok();
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      const ssize_t got = fi_cq_readerr(ep.cq.get(), &err, 0);
      if (got == -FI_EAGAIN) continue;
      if (got < 0) return FabricStatus(got, "fi_cq_readerr");
      uint64_t request_id = kNoRequest;
      if (RequestSlot* slot = ep.requests.FromContext(err.op_context); slot && slot->in_use) {
        request_id = slot->request_id;
        ep.requests.Release(slot);
      } else if (RequestSlot* rslot = ep.receives.FromContext(err.op_context)) {
        if (rslot->in_use) ep.receives.Release(rslot);
        // verbs: once a connection enters the error state (measured on rxe0 after a remote
        // access error; a torn-down connection does the same) every receive writ posted
        // for remote CQ data comes back flushed (FI_ECANCELED, "Work Request Flushed Error").
        // Those receives are writ's own, not a request of the caller and not about any
        // data: handing out 256 anonymous error records per connection would drown the
        // caller's own records. The caller's requests still get their own records.
        if (err.err == FI_ECANCELED) continue;
      } else if (slot) {
        continue;  // already failed when the connection shut down
      }
      char text[256] = {0};
      const char* described =
          fi_cq_strerror(ep.cq.get(), err.prov_errno, err.err_data, text, sizeof text);
      out.push_back(WorkCompletion::Error(
          request_id, ep.id, err.err,
          ProviderError{err.prov_errno, described ? described : LibfabricStrerror(err.err)}));
      ++appended;
      continue;
    }
    if (n < 0) return FabricStatus(n, "fi_cq_read");
    for (ssize_t i = 0; i < n; ++i) {
      const fi_cq_data_entry& e = entries[i];
      WorkCompletion::SuccessFields fields{Operation::kOther, e.flags, std::nullopt, std::nullopt};
      uint64_t request_id = kNoRequest;
      if (RequestSlot* slot = ep.requests.FromContext(e.op_context)) {
        if (!slot->in_use) continue;  // already failed when the connection shut down
        request_id = slot->request_id;
        ep.requests.Release(slot);
        fields.operation = (e.flags & FI_SEND) ? Operation::kSend : Operation::kWrite;
      } else if (RequestSlot* rslot = ep.receives.FromContext(e.op_context)) {
        // A receive consumed by a write-with-data (FI_RX_CQ_DATA): post it again.
        fields.operation =
            (e.flags & FI_REMOTE_CQ_DATA) ? Operation::kRemoteWrite : Operation::kReceive;
        if (fields.operation == Operation::kReceive) fields.length = e.len;
        if (fi_recv(ep.ep.get(), nullptr, 0, nullptr, FI_ADDR_UNSPEC, &rslot->context) != 0) {
          ep.receives.Release(rslot);
        }
      } else if (e.flags & (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)) {
        fields.operation = Operation::kRemoteWrite;
      }
      if (fields.operation == Operation::kRemoteWrite && (e.flags & FI_REMOTE_CQ_DATA)) {
        fields.remote_data = e.data;
      }
      if (rdm && fields.operation == Operation::kRemoteWrite) fields.source = sources[i];
      out.push_back(WorkCompletion::Success(request_id, ep.id, fields));
      ++appended;
    }
    // Fewer than asked for: the queue was empty then. Asking again only to hear -FI_EAGAIN
    // is one more round of provider progress (on tcp a system call) per poll; what comes
    // meanwhile is read by the next one.
    if (static_cast<size_t>(n) < batch) return Status::Ok();
  }
  return Status::Ok();
}

void FabricNode::FailShutDownLocked(Endpoint& ep, std::vector<WorkCompletion>& out) {
  ep.requests.ForEachInFlight([&](RequestSlot& slot) {
    out.push_back(WorkCompletion::Error(
        slot.request_id, ep.id, FI_ESHUTDOWN,
        ProviderError{0,
                      "the connection was shut down (FI_SHUTDOWN) before this request "
                      "completed; synthesized by writ, not reported by the provider"}));
    ep.requests.Release(&slot);
  });
}

size_t FabricNode::outstanding() const {
  MutexLock lock(mu_);
  size_t total = 0;
  for (const auto& ep : endpoints_) total += ep ? ep->requests.in_flight() : 0;
  return total;
}

size_t FabricNode::live_endpoints() const {
  MutexLock lock(mu_);
  return static_cast<size_t>(std::count_if(endpoints_.begin(), endpoints_.end(),
                                           [](const auto& ep) { return ep != nullptr; }));
}

}  // namespace writ::fabric

namespace writ::fabric {

Result<std::unique_ptr<FabricPort>> OpenFabricNode(const NodeOptions& options) {
  WRIT_ASSIGN_OR_RETURN(auto node, FabricNode::Open(options));
  return std::unique_ptr<FabricPort>(std::move(node));
}

}  // namespace writ::fabric
