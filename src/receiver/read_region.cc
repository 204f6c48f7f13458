#include "receiver/read_region.h"

#include "store/regions.h"

namespace writ::receiver {

Result<std::vector<uint8_t>> ReadRetainedRegion(store::Store& store, const std::string& id,
                                                uint64_t k, uint64_t max_bytes) {
  WRIT_ASSIGN_OR_RETURN(std::optional<store::RetainedDelivery> held, store.Lookup(id));
  if (!held) return Status::NotFound(id + " is not retained here");
  const store::DeliveryMeta& meta = held->meta;
  auto range = store::RegionRange(meta.region_lengths, meta.bytes, k);
  if (!range.ok()) return range.status().Annotate(id);
  if (range->length > max_bytes) {
    return Status::InvalidArgument(id + " region " + std::to_string(k) + " is " +
                                   std::to_string(range->length) + " bytes, more than the " +
                                   std::to_string(max_bytes) + " asked for at most");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(range->length));
  WRIT_RETURN_IF_ERROR(store.Read(id, range->offset, bytes));
  return bytes;
}

}  // namespace writ::receiver
