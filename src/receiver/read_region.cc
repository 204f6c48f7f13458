#include "receiver/read_region.h"

#include "common/hex.h"
#include "store/lifecycle.h"
#include "store/regions.h"
#include "writ/vocabulary.h"

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

Result<StoredDelivery> HeldInStore(store::Store& store, const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(std::optional<store::RetainedDelivery> held, store.Lookup(id));
  if (!held) return Status::NotFound(id + " is not retained here");
  StoredDelivery out;
  out.id = held->meta.id;
  out.bytes = held->meta.bytes;
  out.retention = held->retention;
  out.rule = std::string(RuleName(held->meta.rule));
  out.digest_hex = ToHex(held->meta.digest);
  out.region_lengths = held->meta.region_lengths;
  out.receipts = std::move(held->receipts);
  if (held->held_until_ms != 0) out.held_until = store::UnixMsRfc3339(held->held_until_ms);
  return out;
}

Status ReadRetained(store::Store& store, const std::string& id, uint64_t offset,
                    std::span<uint8_t> out) {
  WRIT_ASSIGN_OR_RETURN(std::optional<store::RetainedDelivery> held, store.Lookup(id));
  if (!held) return Status::NotFound(id + " is not retained here");
  if (offset > held->meta.bytes || out.size() > held->meta.bytes - offset) {
    return Status::InvalidArgument(id + ": bytes " + std::to_string(offset) + " to " +
                                   std::to_string(offset + out.size()) + " pass its end (" +
                                   std::to_string(held->meta.bytes) + " bytes)");
  }
  return store.Read(id, offset, out);
}

}  // namespace writ::receiver
