#include "sender/addressed_announce.h"

#include <algorithm>

namespace writ::sender {

Status CheckAddressedOptions(const DeliveryOptions& options) {
  if (options.target.empty()) {
    if (options.target_offset != 0) {
      return Status::InvalidArgument("a target offset needs a target to deliver into");
    }
    if (!options.target_pages.empty()) {
      return Status::InvalidArgument("target pages need a target to deliver into");
    }
    return Status::Ok();
  }
  if (!options.target_pages.empty() && options.target_offset != 0) {
    return Status::InvalidArgument("target " + options.target +
                                   ": give a target offset or a page list, not both");
  }
  return Status::Ok();
}

uint64_t AddressedChunkSize(const DeliveryOptions& options, uint64_t bytes, uint64_t chunk_size) {
  const uint64_t pages = options.target_pages.size();
  if (pages == 0 || bytes == 0 || bytes % pages != 0) return chunk_size;
  return std::min(chunk_size, bytes / pages);
}

void AddressAnnounce(const DeliveryOptions& options, protocol::Announce& announce) {
  announce.target = options.target;
  announce.target_offset = options.target_offset;
  announce.target_pages = options.target_pages;
}

}  // namespace writ::sender
