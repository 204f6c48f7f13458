// The completion levels libfabric can promise for an initiator's operation,
// weakest first (fi_cq(3)). writ records both the level asked for and the
// level the provider granted on every request. Names: writ/vocabulary.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "writ/types.h"
#include "writ/vocabulary.h"

namespace writ::fabric {

using CompletionLevel = ::writ::CompletionLevel;

uint64_t CompletionLevelFlag(CompletionLevel level);  // FI_*_COMPLETE, 0 for the default

// What the level guarantees and what it does not, in one sentence each.
std::string_view CompletionLevelGuarantee(CompletionLevel level);
std::string_view CompletionLevelDoesNotGuarantee(CompletionLevel level);

}  // namespace writ::fabric
