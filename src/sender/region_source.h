// The bytes of a scatter-gather delivery: many (address, length) regions of caller memory
// whose concatenation, in order, is the delivery. Chunks are gathered from them at any
// offset (into the staging buffers) and digested straight from them, in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vocabulary/digest.h"
#include "writ/sender.h"
#include "writ/status.h"

namespace writ::sender {

class RegionList {
 public:
  // Checks the table: at most protocol::Limits::max_regions regions, no null address
  // with a length, a total that fits 64 bits. Zero-length regions are kept (numbering).
  static Result<RegionList> Of(std::span<const Region> regions);

  uint64_t size() const { return size_; }
  const std::vector<uint64_t>& lengths() const { return lengths_; }

  // Copies [offset, offset + out.size()) of the concatenation into `out`.
  Status Read(uint64_t offset, std::span<uint8_t> out) const;
  // Feeds [offset, offset + length) of the concatenation to `digester`, without a copy.
  Status Fold(vocabulary::Digester& digester, uint64_t offset, uint64_t length) const;

 private:
  // Calls visit(piece) for each piece of [offset, offset + length), in order.
  template <typename Visit>
  Status ForEachPiece(uint64_t offset, uint64_t length, Visit visit) const;

  std::vector<const uint8_t*> data_;
  std::vector<uint64_t> lengths_;
  std::vector<uint64_t> starts_;  // offset of each region in the concatenation
  uint64_t size_ = 0;
};

}  // namespace writ::sender
