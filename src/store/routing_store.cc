#include "store/routing_store.h"

namespace writ::store {

Result<std::optional<RetainedDelivery>> RoutingStore::Lookup(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto durable, durable_->Lookup(id));
  if (durable) return durable;
  return volatile_->Lookup(id);
}

Result<std::optional<RetainedDelivery>> RoutingStore::LookupVerified(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto durable, durable_->LookupVerified(id));
  if (durable) return durable;
  return volatile_->LookupVerified(id);
}

Result<std::unique_ptr<PayloadWriter>> RoutingStore::Begin(DeliveryMeta meta,
                                                           RetentionClass retention) {
  if (!meta.supersedes_weaker) return For(retention).Begin(std::move(meta), retention);
  WRIT_ASSIGN_OR_RETURN(auto held, Lookup(meta.id));
  WRIT_ASSIGN_OR_RETURN(auto writer, For(retention).Begin(std::move(meta), retention));
  if (held) writer->KeepWeakerPromise(held->held_until_ms);
  return writer;
}

Status RoutingStore::AppendReceipt(const std::string& id, const std::string& receipt_json) {
  // The durable store knows committed deliveries that Lookup does not show yet.
  Status s = durable_->AppendReceipt(id, receipt_json);
  // A delivery retained durably that the volatile store held too was upgraded: the durable
  // copy is the one answered from now on (Lookup asks it first); the volatile one goes.
  if (s.ok()) return volatile_->DropSuperseded(id);
  if (s.code() != ErrorCode::kNotFound) return s;
  return volatile_->AppendReceipt(id, receipt_json);
}

Status RoutingStore::AppendReceipts(const std::string& id, std::span<const std::string> receipts) {
  // As AppendReceipt, the durable store asked once: it answers NotFound at the first.
  if (receipts.empty()) return Status::Ok();
  Status s = durable_->AppendReceipts(id, receipts);
  if (s.ok()) return volatile_->DropSuperseded(id);
  if (s.code() != ErrorCode::kNotFound) return s;
  return volatile_->AppendReceipts(id, receipts);
}

Status RoutingStore::Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) {
  Status s = durable_->Read(id, offset, out);
  if (s.code() != ErrorCode::kNotFound) return s;
  return volatile_->Read(id, offset, out);
}

Result<HeldView> RoutingStore::View(const std::string& id, uint64_t offset, uint64_t length) {
  auto held = durable_->View(id, offset, length);
  if (held.ok() || held.status().code() != ErrorCode::kNotFound) return held;
  return volatile_->View(id, offset, length);
}

Result<Removal> RoutingStore::Remove(const std::string& id, bool force, uint64_t now_ms) {
  auto removed = durable_->Remove(id, force, now_ms);
  if (removed.ok() || removed.status().code() != ErrorCode::kNotFound) return removed;
  return volatile_->Remove(id, force, now_ms);
}

Result<std::vector<std::string>> RoutingStore::Expired(uint64_t now_ms) {
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> ids, durable_->Expired(now_ms));
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> more, volatile_->Expired(now_ms));
  ids.insert(ids.end(), more.begin(), more.end());
  return ids;
}

}  // namespace writ::store
