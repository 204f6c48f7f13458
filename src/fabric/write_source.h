// A write's local source, checked the same way for every FabricPort (libfabric's and the
// in-memory one): the request's one range or its gathered pieces, each inside an open
// registered region, at most the provider's iov_limit (and kMaxGatherPieces) of them,
// their lengths adding up to the request's length.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "fabric/fabric_port.h"
#include "writ/status.h"

namespace writ::fabric {

struct SourcePiece {
  const MemoryRegion* region;
  uint8_t* data;  // region->data() plus the piece's offset
  uint64_t length;
};

// On the stack: checking a write allocates nothing.
struct WriteSource {
  std::array<SourcePiece, kMaxGatherPieces> pieces;
  size_t count = 0;
  const SourcePiece* begin() const { return pieces.data(); }
  const SourcePiece* end() const { return pieces.data() + count; }
};

Result<WriteSource> CheckedWriteSource(const WriteRequest& request, size_t iov_limit);

}  // namespace writ::fabric
