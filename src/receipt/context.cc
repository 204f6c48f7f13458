#include "receipt/context.h"

#include "fabric/completion_level.h"
#include "writ/version.h"

namespace writ::receipt {

std::string TransportFor(const fabric::ProviderInfo& provider) {
  const std::string& name = provider.name();
  if (name == "shm") return "shm";
  if (name == "tcp" || name == "tcp;ofi_rxm" || name == "sockets") return "tcp";
  if (name == "efa" || name.rfind("efa;", 0) == 0) return "efa";
  if (name.rfind("verbs", 0) == 0) {
    // Soft-RoCE and RoCE NICs run RC over Ethernet; iWARP devices are named iw*.
    const std::string& dev = provider.domain_name();
    if (dev.rfind("rxe", 0) == 0 || dev.find("roce") != std::string::npos) return "roce_rc";
    if (dev.rfind("iw", 0) == 0 || dev.rfind("siw", 0) == 0) return "iwarp";
    return "ib_rc";
  }
  return "other";
}

// Built in one string: the sender builds a context per delivery.
std::string SoftwareRelease(const fabric::ProviderInfo& provider) {
  const std::string libfabric = fabric::LibfabricVersion();
  const auto& provider_version = provider.provider_version();
  std::string out;
  out.reserve(16 + Version().size() + libfabric.size() + provider_version.size());
  out += "writ ";
  out += Version();
  out += "; ";
  out += libfabric;
  out += "; ";
  out += provider_version;
  return out;
}

ReceiptContext ContextFor(const fabric::ProviderInfo& provider, CompletionLevel relied_on,
                          bool write_with_data) {
  ReceiptContext c;
  c.operation = write_with_data ? "rdma_write_with_imm" : "rdma_write";
  c.transport = TransportFor(provider);
  c.provider = provider.name();
  c.device = provider.domain_name();
  c.memory_type = "dram";
  c.software_release = SoftwareRelease(provider);
  c.completion_level = std::string(CompletionLevelName(relied_on));
  if (!provider.checks_remote_keys()) {
    c.notes.push_back(
        "shm does not check memory keys on its fast path: protection between processes is the "
        "operating system's (same user), not the key's");
  }
  if (c.transport == "tcp") {
    c.notes.push_back("the tcp provider emulates RDMA writes in software over TCP sockets");
  }
  return c;
}

}  // namespace writ::receipt
