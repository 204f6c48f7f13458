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
    visit(i, at, n);
    done += n;
  }
  return Status::Ok();
}

Status RegionList::Read(uint64_t offset, std::span<uint8_t> out) const {
  uint8_t* to = out.data();
  return ForEachPiece(offset, out.size(), [&](size_t region, uint64_t at, uint64_t n) {
    std::memcpy(to, data_[region] + at, n);
    to += n;
  });
}

Status RegionList::Fold(vocabulary::Digester& digester, uint64_t offset, uint64_t length) const {
  return ForEachPiece(offset, length, [&](size_t region, uint64_t at, uint64_t n) {
    digester.Update(std::span<const uint8_t>(data_[region] + at, n));
  });
}

void RegisteredRegions::Register(fabric::FabricPort& port, const RegionList& list,
                                 uint64_t min_bytes) {
  list_ = &list;
  regions_.clear();
  regions_.resize(list.lengths().size());
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (list.lengths()[i] < min_bytes) continue;
    auto region = port.Register(const_cast<uint8_t*>(list.data(i)), list.lengths()[i],
                                fabric::Access::kLocalSource);
    if (!region.ok()) {
      note_ = "registering region " + std::to_string(i) + " failed (" + region.status().message() +
              "): staged";
      continue;
    }
    regions_[i] = std::move(region).value();
    ++registered_;
  }
}

bool RegisteredRegions::Pieces(uint64_t offset, uint64_t length, size_t max_pieces,
                               std::vector<fabric::LocalPiece>& out) const {
  out.clear();
  if (registered_ == 0 || length == 0) return false;
  bool all = true;
  const Status walked = list_->ForEachPiece(offset, length, [&](size_t i, uint64_t at, uint64_t n) {
    if (!regions_[i].open() || out.size() >= max_pieces) {
      all = false;
      return;
    }
    out.push_back(fabric::LocalPiece{&regions_[i], at, n});
  });
  if (walked.ok() && all) return true;
  out.clear();
  return false;
}

}  // namespace writ::sender
