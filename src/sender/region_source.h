// The bytes of a scatter-gather delivery: many (address, length) regions of caller memory
// whose concatenation, in order, is the delivery. Chunks are gathered from them at any
// offset (into the staging buffers) and digested straight from them, in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fabric/fabric_port.h"
#include "fabric/memory_region.h"
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
  const uint8_t* data(size_t region) const { return data_[region]; }

  // Calls visit(region, offset in it, length) for each piece of [offset, offset + length),
  // in order.
  template <typename Visit>
  Status ForEachPiece(uint64_t offset, uint64_t length, Visit visit) const;

 private:
  std::vector<const uint8_t*> data_;
  std::vector<uint64_t> lengths_;
  std::vector<uint64_t> starts_;  // offset of each region in the concatenation
  uint64_t size_ = 0;
};

// The regions of a list that are long enough to register (at least kZeroCopyMinBytes, as for
// a file: below it a copy costs less than fi_mr_reg), registered as write sources. A chunk
// whose pieces all lie in them, in at most the provider's iov_limit pieces, is written from
// them with one gathered write and no copy; any other chunk is gathered into staging.
class RegisteredRegions {
 public:
  // Registers what it can; a failed registration leaves that region to staging (`note`).
  void Register(fabric::FabricPort& port, const RegionList& list, uint64_t min_bytes);
  size_t count() const { return registered_; }
  const std::string& note() const { return note_; }
  // The pieces of [offset, offset + length) when every one lies in a registered region and
  // there are at most `max_pieces`; false otherwise (the chunk is staged).
  bool Pieces(uint64_t offset, uint64_t length, size_t max_pieces,
              std::vector<fabric::LocalPiece>& out) const;

 private:
  const RegionList* list_ = nullptr;
  std::vector<fabric::MemoryRegion> regions_;  // by region index; not open: not registered
  size_t registered_ = 0;
  std::string note_;
};

}  // namespace writ::sender
