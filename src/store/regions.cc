#include "store/regions.h"

#include <charconv>

namespace writ::store {

std::string EncodeRegionLengths(const std::vector<uint64_t>& lengths) {
  std::string out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(lengths[i]);
  }
  return out;
}

Result<std::vector<uint64_t>> DecodeRegionLengths(std::string_view text) {
  std::vector<uint64_t> lengths;
  if (text.empty()) return lengths;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (;;) {
    uint64_t length = 0;
    const auto [next, ec] = std::from_chars(p, end, length);
    if (ec != std::errc() || next == p) {
      return Status::Malformed("region table: not a list of lengths: " + std::string(text));
    }
    lengths.push_back(length);
    if (next == end) return lengths;
    if (*next != ',')
      return Status::Malformed("region table: unexpected '" + std::string(1, *next) + "'");
    p = next + 1;
  }
}

Result<ByteRange> RegionRange(const std::vector<uint64_t>& lengths, uint64_t bytes, uint64_t k) {
  if (lengths.empty()) {
    if (k == 0) return ByteRange{0, bytes};
    return Status::NotFound("region " + std::to_string(k) +
                            ": the delivery was not scatter-gather (one region, 0)");
  }
  if (k >= lengths.size()) {
    return Status::NotFound("region " + std::to_string(k) + ": the delivery has " +
                            std::to_string(lengths.size()) + " regions (0.." +
                            std::to_string(lengths.size() - 1) + ")");
  }
  uint64_t offset = 0;
  for (uint64_t i = 0; i <= k; ++i) {
    if (lengths[i] > bytes - offset) {
      return Status::Malformed("region table of " + std::to_string(lengths.size()) +
                               " regions does not fit the " + std::to_string(bytes) +
                               "-byte delivery");
    }
    if (i < k) offset += lengths[i];
  }
  return ByteRange{offset, lengths[k]};
}

}  // namespace writ::store
