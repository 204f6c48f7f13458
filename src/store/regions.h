// A scatter-gather delivery's region table as the store keeps it: the lengths of its
// regions, in order (their concatenation is the delivery), and where region k lies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"

namespace writ::store {

// "4096,0,8192": the index's `regions` column; "" for a plain delivery.
std::string EncodeRegionLengths(const std::vector<uint64_t>& lengths);
Result<std::vector<uint64_t>> DecodeRegionLengths(std::string_view text);

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Where region `k` lies in a delivery of `bytes` bytes. A plain delivery (no table) is
// one region, 0. kNotFound when there is no region k.
Result<ByteRange> RegionRange(const std::vector<uint64_t>& lengths, uint64_t bytes, uint64_t k);

}  // namespace writ::store
