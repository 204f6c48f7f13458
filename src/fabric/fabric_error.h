// The one place where libfabric return codes become writ Status values.
#pragma once

#include <string>
#include <string_view>

#include "writ/status.h"

namespace writ::fabric {

// "FI_ECANCELED", "FI_EAGAIN", ... ; "FI_E<n>" for numbers without a name.
std::string FabricErrorName(int fi_errno);

// Converts a negative libfabric return code from `operation` into a Status that
// keeps the provider's error number and its text. `rc` must be negative.
Status FabricStatus(long rc, std::string_view operation);

}  // namespace writ::fabric
