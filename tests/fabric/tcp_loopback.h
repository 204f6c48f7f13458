// Node options for in-process tcp tests: a target on 127.0.0.1 and an initiator of it.
#pragma once

#include <string>

#include "fabric/node.h"

namespace writ::fabric {

inline NodeOptions LoopbackTcpTarget() {
  NodeOptions options;
  options.provider.provider = "tcp";
  options.provider.role = Role::kTarget;
  options.provider.node = "127.0.0.1";
  options.provider.service = "0";
  return options;
}

// `address` is the target's LocalAddressText(), "127.0.0.1:PORT".
inline NodeOptions LoopbackTcpInitiator(const std::string& address) {
  NodeOptions options;
  options.provider.provider = "tcp";
  options.provider.role = Role::kInitiator;
  options.provider.node = address.substr(0, address.rfind(':'));
  options.provider.service = address.substr(address.rfind(':') + 1);
  return options;
}

}  // namespace writ::fabric
