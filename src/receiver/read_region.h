// Receiver::ReadRegion, Held and Read: a retained delivery, read back from the store.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "store/store.h"
#include "writ/receiver.h"
#include "writ/status.h"

namespace writ::receiver {

// kNotFound when `id` is not retained or has no region `k`; kInvalidArgument when
// the region is longer than `max_bytes` (the bytes are returned in memory).
Result<std::vector<uint8_t>> ReadRetainedRegion(store::Store& store, const std::string& id,
                                                uint64_t k, uint64_t max_bytes);

// What the store holds for `id`; kNotFound when it is not retained.
Result<StoredDelivery> HeldInStore(store::Store& store, const std::string& id);

// Bytes [offset, offset + out.size()) of a retained delivery, into `out`.
Status ReadRetained(store::Store& store, const std::string& id, uint64_t offset,
                    std::span<uint8_t> out);

}  // namespace writ::receiver
