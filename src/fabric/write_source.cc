#include "fabric/write_source.h"

#include <algorithm>
#include <string>

#include "fabric/memory_region.h"

namespace writ::fabric {
namespace {

Status AddPiece(WriteSource& out, const MemoryRegion* region, uint64_t offset, uint64_t length) {
  if (region == nullptr || !region->open()) {
    return Status::InvalidArgument("write needs an open registered source region");
  }
  if (offset > region->length() || length > region->length() - offset) {
    return Status::InvalidArgument("write source range lies outside its registered region");
  }
  out.pieces[out.count++] = SourcePiece{region, region->data() + offset, length};
  return Status::Ok();
}

}  // namespace

Result<WriteSource> CheckedWriteSource(const WriteRequest& request, size_t iov_limit) {
  WriteSource source;
  if (request.gather.empty()) {
    WRIT_RETURN_IF_ERROR(AddPiece(source, request.local, request.local_offset, request.length));
    return source;
  }
  if (request.gather.size() > std::min(iov_limit, kMaxGatherPieces)) {
    return Status::InvalidArgument("a gathered write of " + std::to_string(request.gather.size()) +
                                   " pieces exceeds the provider's iov_limit " +
                                   std::to_string(iov_limit));
  }
  uint64_t total = 0;
  for (const LocalPiece& piece : request.gather) {
    WRIT_RETURN_IF_ERROR(AddPiece(source, piece.region, piece.offset, piece.length));
    total += piece.length;
  }
  if (total != request.length) {
    return Status::InvalidArgument("a gathered write's pieces do not add up to its length");
  }
  return source;
}

}  // namespace writ::fabric
