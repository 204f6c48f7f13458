#include "fabric/completion_level.h"

#include <rdma/fabric.h>

namespace writ::fabric {

uint64_t CompletionLevelFlag(CompletionLevel level) {
  switch (level) {
    case CompletionLevel::kProviderDefault: return 0;
    case CompletionLevel::kInject: return FI_INJECT_COMPLETE;
    case CompletionLevel::kTransmit: return FI_TRANSMIT_COMPLETE;
    case CompletionLevel::kDelivery: return FI_DELIVERY_COMPLETE;
  }
  return 0;
}

std::string_view CompletionLevelGuarantee(CompletionLevel level) {
  switch (level) {
    case CompletionLevel::kProviderDefault:
      return "the provider accepted the request; what that means is provider-specific";
    case CompletionLevel::kInject: return "the source buffer may be reused";
    case CompletionLevel::kTransmit:
      return "the data left the initiator and reached the target's transport";
    case CompletionLevel::kDelivery: return "the data is visible in the target buffer";
  }
  return "";
}

std::string_view CompletionLevelDoesNotGuarantee(CompletionLevel level) {
  switch (level) {
    case CompletionLevel::kProviderDefault:
    case CompletionLevel::kInject:
      return "anything at the target: placement, notification, processing, retention";
    case CompletionLevel::kTransmit:
      return "placement in the target buffer, notification, processing, retention";
    case CompletionLevel::kDelivery:
      return "that the target application looked at the bytes, or that they survive a crash";
  }
  return "";
}

}  // namespace writ::fabric
