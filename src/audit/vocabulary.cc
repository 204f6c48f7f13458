// The wire names of the contract's enumerations and retention classes.
#include <charconv>

#include "writ/audit.h"

namespace writ::audit {

std::string_view ToString(Operation value) {
  switch (value) {
    case Operation::kRdmaWrite: return "rdma_write";
    case Operation::kRdmaWriteWithImm: return "rdma_write_with_imm";
    case Operation::kSend: return "send";
    case Operation::kOther: return "other";
  }
  return "other";
}

std::string_view ToString(Transport value) {
  switch (value) {
    case Transport::kIbRc: return "ib_rc";
    case Transport::kRoceRc: return "roce_rc";
    case Transport::kIwarp: return "iwarp";
    case Transport::kTcp: return "tcp";
    case Transport::kShm: return "shm";
    case Transport::kEfa: return "efa";
    case Transport::kOther: return "other";
  }
  return "other";
}

std::string_view ToString(MemoryType value) {
  switch (value) {
    case MemoryType::kDram: return "dram";
    case MemoryType::kPmem: return "pmem";
    case MemoryType::kGpu: return "gpu";
    case MemoryType::kFile: return "file";
    case MemoryType::kOther: return "other";
  }
  return "other";
}

std::string_view ToString(CompletionLevel value) {
  switch (value) {
    case CompletionLevel::kInject: return "inject";
    case CompletionLevel::kTransmit: return "transmit";
    case CompletionLevel::kDelivery: return "delivery";
    case CompletionLevel::kCommit: return "commit";
  }
  return "inject";
}

std::string_view ToString(TransportState value) {
  switch (value) {
    case TransportState::kEstablished: return "established";
    case TransportState::kFailed: return "failed";
    case TransportState::kIncomplete: return "incomplete";
  }
  return "incomplete";
}

std::string_view ToString(PlacementState value) {
  switch (value) {
    case PlacementState::kObserved: return "observed";
    case PlacementState::kStipulated: return "stipulated";
    case PlacementState::kNotEstablished: return "not_established";
  }
  return "not_established";
}

std::string_view ToString(Medium value) {
  switch (value) {
    case Medium::kDram: return "dram";
    case Medium::kGpu: return "gpu";
    case Medium::kPmem: return "pmem";
    case Medium::kDisk: return "disk";
    case Medium::kReplicas: return "replicas";
    case Medium::kOther: return "other";
  }
  return "other";
}

namespace {

// Enumerators 0..last, matched by their wire names.
template <typename Enum>
std::optional<Enum> ByWireName(std::string_view name, Enum last) {
  for (int i = 0; i <= static_cast<int>(last); ++i)
    if (ToString(static_cast<Enum>(i)) == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::optional<Operation> ParseOperation(std::string_view name) {
  return ByWireName(name, Operation::kOther);
}
std::optional<Transport> ParseTransport(std::string_view name) {
  return ByWireName(name, Transport::kOther);
}
std::optional<MemoryType> ParseMemoryType(std::string_view name) {
  return ByWireName(name, MemoryType::kOther);
}
std::optional<CompletionLevel> ParseCompletionLevel(std::string_view name) {
  return ByWireName(name, CompletionLevel::kCommit);
}

std::string_view ToString(NotificationState value) {
  switch (value) {
    case NotificationState::kEstablished: return "established";
    case NotificationState::kPartial: return "partial";
    case NotificationState::kNone: return "none";
  }
  return "none";
}

std::string_view ToString(UnattributedEntry::Kind value) {
  switch (value) {
    case UnattributedEntry::Kind::kAcknowledgement: return "acknowledgement";
    case UnattributedEntry::Kind::kNotification: return "notification";
    case UnattributedEntry::Kind::kPlacement: return "placement";
    case UnattributedEntry::Kind::kRetentionPromise: return "retention_promise";
  }
  return "acknowledgement";
}

std::string_view ToString(ValidationState value) {
  switch (value) {
    case ValidationState::kEstablished: return "established";
    case ValidationState::kFailed: return "failed";
    case ValidationState::kUnresolved: return "unresolved";
    case ValidationState::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view ToString(ProcessingState value) {
  return value == ProcessingState::kEstablished ? "established" : "unknown";
}

std::string_view ToString(Verdict value) {
  return value == Verdict::kSupported ? "supported" : "not_supported";
}

std::optional<Survives> Survives::Parse(std::string_view text) {
  if (text == "process-running") return Survives{Class::kProcessRunning, 0};
  if (text == "process-restart") return Survives{Class::kProcessRestart, 0};
  if (text == "power-loss") return Survives{Class::kPowerLoss, 0};
  constexpr std::string_view kReplicated = "replicated:";
  if (!text.starts_with(kReplicated)) return std::nullopt;
  const std::string_view digits = text.substr(kReplicated.size());
  // Canonical decimal only, so that the report repeats exactly what it read.
  if (digits.empty() || digits[0] == '0') return std::nullopt;
  uint64_t k = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return Survives{Class::kReplicated, k};
}

std::string Survives::ToString() const {
  switch (cls) {
    case Class::kProcessRunning: return "process-running";
    case Class::kProcessRestart: return "process-restart";
    case Class::kPowerLoss: return "power-loss";
    case Class::kReplicated: return "replicated:" + std::to_string(replicas);
  }
  return "process-running";
}

std::string RetentionState::ToString() const {
  switch (kind) {
    case Kind::kNonePromised: return "none_promised";
    case Kind::kIncompletePromise: return "incomplete_promise";
    case Kind::kPromised: return survives.ToString();
  }
  return "none_promised";
}

}  // namespace writ::audit
