#include "sender/region_source.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "protocol/limits.h"

namespace writ::sender {

Result<RegionList> RegionList::Of(std::span<const Region> regions) {
  const uint32_t max_regions = protocol::Limits{}.max_regions;
  if (regions.size() > max_regions) {
    return Status::InvalidArgument(std::to_string(regions.size()) + " regions, at most " +
                                   std::to_string(max_regions) + " per delivery");
  }
  RegionList list;
  list.data_.reserve(regions.size());
  list.lengths_.reserve(regions.size());
  list.starts_.reserve(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const Region& r = regions[i];
    if (r.address == nullptr && r.length > 0) {
      return Status::InvalidArgument("region " + std::to_string(i) + ": null address");
    }
    if (r.length > UINT64_MAX - list.size_) {
      return Status::InvalidArgument("the regions add up to more than 2^64 bytes");
    }
    list.data_.push_back(static_cast<const uint8_t*>(r.address));
    list.lengths_.push_back(r.length);
    list.starts_.push_back(list.size_);
    list.size_ += r.length;
  }
  return list;
}

template <typename Visit>
Status RegionList::ForEachPiece(uint64_t offset, uint64_t length, Visit visit) const {
  if (offset > size_ || length > size_ - offset) {
    return Status::InvalidArgument("read past the end of the delivery's regions");
  }
  // The last region starting at or before `offset` (zero-length ones are passed over).
  size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                 starts_.begin());
  i = i == 0 ? 0 : i - 1;
  for (uint64_t done = 0; done < length; ++i) {
    const uint64_t at = offset + done - starts_[i];
    if (at >= lengths_[i]) continue;
    const uint64_t n = std::min(lengths_[i] - at, length - done);
    visit(std::span<const uint8_t>(data_[i] + at, n));
    done += n;
  }
  return Status::Ok();
}

Status RegionList::Read(uint64_t offset, std::span<uint8_t> out) const {
  uint8_t* to = out.data();
  return ForEachPiece(offset, out.size(), [&](std::span<const uint8_t> piece) {
    std::memcpy(to, piece.data(), piece.size());
    to += piece.size();
  });
}

Status RegionList::Fold(vocabulary::Digester& digester, uint64_t offset, uint64_t length) const {
  return ForEachPiece(offset, length,
                      [&](std::span<const uint8_t> piece) { digester.Update(piece); });
}

}  // namespace writ::sender
