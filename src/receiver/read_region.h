// Receiver::ReadRegion: region k of a retained delivery, read back from the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"
#include "writ/status.h"

namespace writ::receiver {

// kNotFound when `id` is not retained or has no region `k`; kInvalidArgument when
// the region is longer than `max_bytes` (the bytes are returned in memory).
Result<std::vector<uint8_t>> ReadRetainedRegion(store::Store& store, const std::string& id,
                                                uint64_t k, uint64_t max_bytes);

}  // namespace writ::receiver
