#include "fabric/provider.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

namespace writ::fabric {

const std::vector<std::string> kPreferredProviders = {"verbs", "efa", "cxi", "tcp"};

namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

bool Contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

InfoPtr MakeHints(const std::string& provider, EndpointKind kind) {
  auto api = Libfabric();
  if (!api.ok()) return nullptr;
  InfoPtr hints((*api)->dupinfo(nullptr));  // fi_allocinfo()
  if (!hints) return hints;
  hints->caps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE;
  // shm: each notification says which peer wrote it (fi_cq_readfrom), so the receiver counts
  // it only for that peer's windows (docs/security.md). rxm (libfabric 1.17) fills in no
  // source for a remote write's completion (measured: every writer read as address 0).
  if (kind == EndpointKind::kRdm && provider == "shm") hints->caps |= FI_SOURCE;
  hints->mode = FI_CONTEXT | FI_RX_CQ_DATA;
  // No FI_MR_ENDPOINT: writ binds one region to many connections on a MSG target.
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->domain_attr->cq_data_size = 4;  // the verbs immediate is 32 bits
  hints->ep_attr->type = kind == EndpointKind::kMsg ? FI_EP_MSG : FI_EP_RDM;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  if (provider == "tcp" || provider == "tcp;ofi_rxm") hints->addr_format = FI_SOCKADDR_IN;
  return hints;
}

// fi_getinfo with `hints`; node/service/flags per role and endpoint kind.
Result<InfoPtr> GetInfo(const ProviderRequest& request, EndpointKind kind, fi_info* hints) {
  const char* node = nullptr;
  const char* service = nullptr;
  uint64_t flags = 0;
  const bool shm = request.provider == "shm";
  if (!shm) {
    if (!request.node.empty()) node = request.node.c_str();
    if (!request.service.empty()) service = request.service.c_str();
    if (request.role == Role::kTarget || kind == EndpointKind::kRdm) {
      // The address given is our own (listen / bind); an RDM initiator binds locally too.
      if (node || service) flags |= FI_SOURCE;
    }
  }
  WRIT_ASSIGN_OR_RETURN(const LibfabricApi* api, Libfabric());
  fi_info* out = nullptr;
  const int rc = api->getinfo(kApiVersion, node, service, flags, hints, &out);
  if (rc != 0) return FabricStatus(rc, "fi_getinfo(provider " + request.provider + ")");
  InfoPtr info(out);
  // The first entry of the exact provider name we asked for.
  for (fi_info* cur = out; cur != nullptr; cur = cur->next) {
    if (cur->fabric_attr->prov_name && request.provider == cur->fabric_attr->prov_name) {
      if (cur != out) return InfoPtr(api->dupinfo(cur));
      return info;
    }
  }
  return Status::Unsupported("provider " + request.provider + " is not available here");
}

// Does fi_getinfo still answer when the hints ask for `level` on every transmit?
bool AcceptsLevel(const ProviderRequest& request, EndpointKind kind, CompletionLevel level) {
  InfoPtr hints = MakeHints(request.provider, kind);
  if (!hints) return false;
  hints->tx_attr->op_flags = CompletionLevelFlag(level);
  return GetInfo(request, kind, hints.get()).ok();
}

// "verbs" for "verbs;ofi_rxm": the provider under rxm; empty for anything else.
std::string CoreProviderOf(const std::string& provider) {
  const std::string suffix = ";ofi_rxm";
  if (provider.size() <= suffix.size() ||
      provider.compare(provider.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return "";
  }
  return provider.substr(0, provider.size() - suffix.size());
}

}  // namespace

EndpointKind EndpointKindFor(const std::string& provider) {
  if (Contains(provider, "ofi_rxm") || Contains(provider, "ofi_rxd") || provider == "shm" ||
      provider == "efa" || provider == "cxi" || provider == "psm2" || provider == "psm3" ||
      provider == "udp" || provider == "memory") {
    return EndpointKind::kRdm;
  }
  return EndpointKind::kMsg;
}

Result<ProviderInfo> ProviderInfo::Discover(const ProviderRequest& request) {
  if (request.provider.empty()) {
    std::string tried;
    for (const auto& candidate : kPreferredProviders) {
      ProviderRequest r = request;
      r.provider = candidate;
      auto found = DiscoverNamed(r);
      if (found.ok()) return found;
      tried += (tried.empty() ? "" : "; ") + found.status().message();
    }
    return Status::Unsupported("no usable provider found (" + tried +
                               "); this machine offers: " + AvailableProviderNames());
  }
  auto found = DiscoverNamed(request);
  if (found.ok()) return found;
  // Say what is there: the usual cause is a name this machine does not offer.
  return found.status().Annotate("provider " + request.provider +
                                 " (this machine offers: " + AvailableProviderNames() + ")");
}

Result<ProviderInfo> ProviderInfo::DiscoverNamed(const ProviderRequest& request) {
  WRIT_RETURN_IF_ERROR(Libfabric().status());  // names the library when it cannot be loaded
  ProviderInfo result;
  result.kind_ = EndpointKindFor(request.provider);
  InfoPtr hints = MakeHints(request.provider, result.kind_);
  if (!hints) return Status::Internal("fi_allocinfo failed");
  WRIT_ASSIGN_OR_RETURN(result.info_, GetInfo(request, result.kind_, hints.get()));

  const fi_info* info = result.info_.get();
  if (info->domain_attr->cq_data_size < 4) {
    return Status::Unsupported("provider " + request.provider + " carries only " +
                               std::to_string(info->domain_attr->cq_data_size) +
                               " bytes of remote CQ data; writ needs 4");
  }
  if (info->domain_attr->mr_key_size > sizeof(uint64_t)) {
    return Status::Unsupported("provider " + request.provider +
                               " uses raw memory keys longer than 64 bits");
  }
  result.name_ = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : request.provider;
  result.domain_ = info->domain_attr->name ? info->domain_attr->name : "";
  result.fabric_ = info->fabric_attr->name ? info->fabric_attr->name : "";

  result.traits_ = Traits{static_cast<uint64_t>(info->domain_attr->mr_mode),
                          info->mode,
                          info->caps,
                          info->domain_attr->cq_data_size,
                          info->ep_attr->max_msg_size,
                          info->tx_attr->size,
                          info->tx_attr->iov_limit,
                          info->fabric_attr->prov_version};
  result.request_ = request;
  // The default level needs no probe; the others are probed when first asked about
  // (Grant, supported_levels): one fi_getinfo each costs 0.1-0.4 ms on tcp.
  const uint32_t default_bit = 1u << static_cast<uint32_t>(CompletionLevel::kProviderDefault);
  result.levels_->probed = default_bit;
  result.levels_->accepted = default_bit;
  return result;
}

ProviderInfo ProviderInfo::Declared(const DeclaredProvider& declared) {
  ProviderInfo result;
  result.name_ = declared.name;
  result.domain_ = declared.domain;
  result.fabric_ = declared.name;
  result.kind_ = declared.kind;
  result.traits_.mr_mode = declared.remote_virtual_address ? FI_MR_VIRT_ADDR : 0;
  result.traits_.caps = declared.names_writers ? FI_SOURCE : 0;
  result.traits_.cq_data_size = 4;
  result.traits_.max_msg_size = declared.max_message_size;
  result.traits_.tx_depth = declared.tx_depth;
  result.traits_.iov_limit = declared.iov_limit;
  result.traits_.prov_version = declared.version;
  result.request_.provider = declared.name;
  // Every level is known: Accepts never asks fi_getinfo about a declared provider.
  uint32_t accepted = 1u << static_cast<uint32_t>(CompletionLevel::kProviderDefault);
  for (CompletionLevel level : declared.levels) accepted |= 1u << static_cast<uint32_t>(level);
  result.levels_->probed = ~0u;
  result.levels_->accepted = accepted;
  return result;
}

bool ProviderInfo::Accepts(CompletionLevel level) const {
  const uint32_t bit = 1u << static_cast<uint32_t>(level);
  if (levels_->probed.load(std::memory_order_acquire) & bit) {
    return (levels_->accepted.load(std::memory_order_acquire) & bit) != 0;
  }
  bool accepted = AcceptsLevel(request_, kind_, level);
  // ofi_rxm hands every RMA write, flags and all, to its core provider's MSG endpoint
  // (rxm_rma.c: rxm_ep_rma_common), and accepts FI_DELIVERY_COMPLETE in fi_getinfo
  // because it implements it for messages. A write over "verbs;ofi_rxm" therefore gets
  // verbs' level, not rxm's (measured on rxe0: rxm accepts delivery, verbs does not).
  // So a level counts only if the core accepts it too.
  const std::string core = CoreProviderOf(request_.provider);
  if (accepted && !core.empty()) {
    ProviderRequest core_request = request_;
    core_request.provider = core;
    core_request.role = Role::kTarget;  // an RDM node's node/service are its own address
    accepted = AcceptsLevel(core_request, EndpointKind::kMsg, level);
  }
  // Two threads probing at once get the same answer; the bits only ever gain.
  if (accepted) levels_->accepted.fetch_or(bit, std::memory_order_release);
  levels_->probed.fetch_or(bit, std::memory_order_release);
  return accepted;
}

std::vector<CompletionLevel> ProviderInfo::supported_levels() const {
  std::vector<CompletionLevel> levels;
  for (CompletionLevel level : {CompletionLevel::kProviderDefault, CompletionLevel::kInject,
                                CompletionLevel::kTransmit, CompletionLevel::kDelivery}) {
    if (Accepts(level)) levels.push_back(level);
  }
  return levels;
}

CompletionLevel ProviderInfo::Grant(CompletionLevel wanted) const {
  for (int level = static_cast<int>(wanted); level > 0; --level) {
    if (Accepts(static_cast<CompletionLevel>(level))) return static_cast<CompletionLevel>(level);
  }
  return CompletionLevel::kProviderDefault;
}

std::string ProviderInfo::provider_version() const {
  const uint32_t v = traits_.prov_version;
  return name_ + " " + std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

bool ProviderInfo::checks_remote_keys() const {
  // Measured (docs/architecture.md): shm writes with process_vm_writev and never looks
  // at the key, so a wrong key overwrites target memory.
  return name_ != "shm";
}

bool ProviderInfo::copies_with_cpu() const {
  const std::string core = CoreProviderOf(name_);
  const std::string& base = core.empty() ? name_ : core;
  return base == "tcp" || base == "shm" || base == "udp" || base == "sockets";
}

Result<std::vector<OfferedDomain>> AvailableProviders() {
  WRIT_ASSIGN_OR_RETURN(const LibfabricApi* api, Libfabric());
  std::vector<OfferedDomain> offered;
  for (EndpointKind kind : {EndpointKind::kMsg, EndpointKind::kRdm}) {
    InfoPtr hints = MakeHints("", kind);
    if (!hints) return Status::Internal("fi_allocinfo failed");
    fi_info* out = nullptr;
    if (api->getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &out) != 0) continue;
    InfoPtr list(out);
    for (const fi_info* cur = out; cur != nullptr; cur = cur->next) {
      if (!cur->fabric_attr->prov_name) continue;
      OfferedDomain d{cur->fabric_attr->prov_name,
                      cur->fabric_attr->name ? cur->fabric_attr->name : "",
                      cur->domain_attr->name ? cur->domain_attr->name : "", kind};
      const bool seen = std::any_of(offered.begin(), offered.end(), [&](const OfferedDomain& o) {
        return o.provider == d.provider && o.domain == d.domain;
      });
      if (!seen) offered.push_back(std::move(d));
    }
  }
  return offered;
}

std::string AvailableProviderNames() {
  auto offered = AvailableProviders();
  if (!offered.ok()) return offered.status().message();
  std::vector<std::string> names;
  for (const OfferedDomain& d : *offered) {
    if (std::find(names.begin(), names.end(), d.provider) == names.end())
      names.push_back(d.provider);
  }
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

std::string LibfabricVersion() {
  auto api = Libfabric();
  if (!api.ok()) return "libfabric not loaded";
  const uint32_t v = (*api)->version();
  return "libfabric " + std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

}  // namespace writ::fabric
