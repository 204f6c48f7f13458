// The store of a receiver started with --data: volatile deliveries stay in the
// scratch-directory VolatileStore, process-restart and power-loss ones go to
// the DurableStore. Lookups ask the durable store first.
#pragma once

#include <memory>

#include "store/durable_store.h"
#include "store/volatile_store.h"

namespace writ::store {

class RoutingStore : public Store {
 public:
  RoutingStore(std::unique_ptr<Store> volatile_store, std::unique_ptr<Store> durable_store)
      : volatile_(std::move(volatile_store)), durable_(std::move(durable_store)) {}

  bool Offers(RetentionClass retention) const override { return For(retention).Offers(retention); }
  Result<std::optional<RetainedDelivery>> Lookup(const std::string& id) override;
  Result<std::optional<RetainedDelivery>> LookupVerified(const std::string& id) override;
  // An upgrade carries the held copy's promise (DeliveryMeta::weaker_held_until_ms).
  Result<std::unique_ptr<PayloadWriter>> Begin(DeliveryMeta meta,
                                               RetentionClass retention) override;
  Status AppendReceipt(const std::string& id, const std::string& receipt_json) override;
  // The durable store is asked once, not once per receipt.
  Status AppendReceipts(const std::string& id, std::span<const std::string> receipts) override;
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override;
  Result<HeldView> View(const std::string& id, uint64_t offset, uint64_t length) override;
  Result<Removal> Remove(const std::string& id, bool force, uint64_t now_ms) override;
  Result<std::vector<std::string>> Expired(uint64_t now_ms) override;

 private:
  Store& For(RetentionClass retention) const {
    return retention == RetentionClass::kVolatile ? *volatile_ : *durable_;
  }

  std::unique_ptr<Store> volatile_;
  std::unique_ptr<Store> durable_;
};

}  // namespace writ::store
