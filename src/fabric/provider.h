// Choosing a libfabric provider and reading back what it really offers.
#pragma once

#include <rdma/fabric.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "fabric/completion_level.h"
#include "fabric/fid.h"
#include "writ/status.h"

namespace writ::fabric {

enum class EndpointKind : uint8_t {
  kMsg,  // connected (FI_EP_MSG): tcp, verbs RC
  kRdm,  // reliable datagram (FI_EP_RDM): tcp;ofi_rxm, verbs;ofi_rxm, shm, efa, cxi
};

enum class Role : uint8_t { kTarget, kInitiator };

struct ProviderRequest {
  // libfabric's name ("tcp", "tcp;ofi_rxm", "shm", "verbs", "verbs;ofi_rxm"); empty picks
  // the best available (see kPreferredProviders).
  std::string provider;
  Role role = Role::kInitiator;
  // Target: the address to listen on / bind to. Initiator of a MSG endpoint: the target's
  // address. Ignored by shm.
  std::string node;
  std::string service;
};

// Order in which an empty provider name is resolved: real fabrics first, then tcp.
extern const std::vector<std::string> kPreferredProviders;

EndpointKind EndpointKindFor(const std::string& provider);

// A provider that is not libfabric's: the in-memory fabric (memory_fabric.h) declares
// what it offers here instead of answering fi_getinfo.
struct DeclaredProvider {
  std::string name;
  std::string domain;
  EndpointKind kind = EndpointKind::kRdm;
  std::vector<CompletionLevel> levels;  // granted as asked; kProviderDefault is implied
  size_t max_message_size = 0;
  size_t iov_limit = 1;
  size_t tx_depth = 0;
  bool remote_virtual_address = true;
  bool names_writers = true;  // as FI_SOURCE: see ProviderInfo::names_writers
  uint32_t version = 0;       // FI_VERSION(major, minor)
};

// What the provider returned for our hints, and what it means for writ.
class ProviderInfo {
 public:
  static Result<ProviderInfo> Discover(const ProviderRequest& request);
  // A declared provider: no fi_info (info() is null), no probes.
  static ProviderInfo Declared(const DeclaredProvider& declared);

  // Null for a declared provider; only FabricNode reads it.
  const fi_info* info() const { return info_.get(); }
  const std::string& name() const { return name_; }           // e.g. "tcp;ofi_rxm"
  const std::string& domain_name() const { return domain_; }  // device, e.g. "lo", "rxe0"
  const std::string& fabric_name() const { return fabric_; }
  EndpointKind kind() const { return kind_; }
  uint64_t mr_mode() const { return traits_.mr_mode; }
  // FI_MR_VIRT_ADDR: remote addresses are virtual addresses; otherwise offsets.
  bool remote_virtual_address() const { return (mr_mode() & FI_MR_VIRT_ADDR) != 0; }
  bool provider_keys() const { return (mr_mode() & FI_MR_PROV_KEY) != 0; }
  bool local_registration_required() const { return (mr_mode() & FI_MR_LOCAL) != 0; }
  // FI_RX_CQ_DATA: a write-with-data consumes a posted receive at the target.
  bool needs_posted_receives_for_data() const { return (traits_.mode & FI_RX_CQ_DATA) != 0; }
  size_t cq_data_size() const { return traits_.cq_data_size; }
  size_t max_message_size() const { return traits_.max_msg_size; }
  size_t tx_depth() const { return traits_.tx_depth; }
  // Local iovecs one write may gather (tx_attr->iov_limit: 4 on tcp and shm).
  size_t iov_limit() const { return std::max<size_t>(1, traits_.iov_limit); }
  std::string provider_version() const;  // "tcp 117.0"
  // Whether a peer's remote write is recorded with its writer's address (RDM with
  // FI_SOURCE: shm, the in-memory fabric). There FI_ADDR_NOTAVAIL (the same value as
  // FI_ADDR_UNSPEC) means a writer not in the address vector, not that none is named.
  bool names_writers() const { return kind_ == EndpointKind::kRdm && (traits_.caps & FI_SOURCE); }
  // Whether a remote write's notification cannot be told from another peer's: an RDM
  // endpoint (many peers on one endpoint) that names no writer (ofi_rxm). There a sender
  // attests its own completed writes over its control connection (protocol `written`,
  // and a ring slot's `deliver` after its write), and a chunk counts only with both.
  bool writes_need_attestation() const { return kind_ == EndpointKind::kRdm && !names_writers(); }
  // Does the provider itself enforce remote keys? shm's fast path does not.
  bool checks_remote_keys() const;
  // Whether the provider moves a write's bytes with the CPU (tcp, shm, udp, sockets, and
  // rxm over them): it copies from the source itself, so a registered source saves no copy.
  // False where a NIC reads registered memory (verbs, efa, cxi, ...).
  bool copies_with_cpu() const;
  // Whether a completion queue's FI_WAIT_FD descriptor wakes on a peer's incoming write,
  // so a target may block on it instead of polling. Measured for tcp (libfabric 1.17);
  // shm, rxm and verbs keep polling until someone measures theirs.
  bool completion_fd_wakes_on_writes() const { return name_ == "tcp"; }

  // Completion levels the provider accepted in fi_getinfo for writes, weakest first. For
  // "X;ofi_rxm" only those X accepts too: rxm passes writes through to X. Probes every
  // level not asked about yet.
  std::vector<CompletionLevel> supported_levels() const;
  // The strongest supported level not above `wanted` (the provider default if none).
  // Probes only from `wanted` down to the first accepted level, once per level.
  CompletionLevel Grant(CompletionLevel wanted) const;

 private:
  // Which levels were probed and which accepted, one bit per CompletionLevel. Shared so
  // that ProviderInfo stays movable; atomics because Grant runs on any thread.
  struct LevelCache {
    std::atomic<uint32_t> probed{0};
    std::atomic<uint32_t> accepted{0};
  };

  // What writ reads of fi_info, copied once (a declared provider has no fi_info).
  struct Traits {
    uint64_t mr_mode = 0;
    uint64_t mode = 0;
    uint64_t caps = 0;
    size_t cq_data_size = 0;
    size_t max_msg_size = 0;
    size_t tx_depth = 0;
    size_t iov_limit = 1;
    uint32_t prov_version = 0;
  };

  ProviderInfo() = default;
  static Result<ProviderInfo> DiscoverNamed(const ProviderRequest& request);
  bool Accepts(CompletionLevel level) const;

  InfoPtr info_;
  Traits traits_;
  ProviderRequest request_;  // what Discover was asked, for later probes
  std::string name_, domain_, fabric_;
  EndpointKind kind_ = EndpointKind::kMsg;
  std::shared_ptr<LevelCache> levels_ = std::make_shared<LevelCache>();
};

// The providers fi_getinfo offers on this machine for what writ asks of one (RMA writes
// with 4 bytes of remote CQ data), connected ones first.
// One entry per provider and domain (device).
struct OfferedDomain {
  std::string provider, fabric, domain;
  EndpointKind kind = EndpointKind::kMsg;
};
Result<std::vector<OfferedDomain>> AvailableProviders();
// Their names, each once, in that order ("tcp, tcp;ofi_rxm, shm"); "none" when there are none.
std::string AvailableProviderNames();

// libfabric's own version, e.g. "libfabric 1.17.0".
std::string LibfabricVersion();

}  // namespace writ::fabric
