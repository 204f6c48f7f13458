// The volatile store: retained bytes live in memory files (memfd) or, with a
// scratch directory, unlinked temporary files, held open by the receiver process
// (not the process's heap; bounded by the store's capacity whatever the delivery
// size). They vanish when the process ends.
#pragma once

#include <map>
#include <mutex>

#include "store/env.h"
#include "store/store.h"

namespace writ::store {

class VolatileStore : public Store {
 public:
  // `scratch_dir` holds the unlinked files (empty: memfd memory files); `capacity` bounds
  // the bytes held. File calls go
  // through `env` (nullptr: Env::Default()).
  static Result<std::unique_ptr<VolatileStore>> Open(std::string scratch_dir, uint64_t capacity,
                                                     Env* env = nullptr);
  ~VolatileStore() override;

  bool Offers(RetentionClass retention) const override {
    return retention == RetentionClass::kVolatile;
  }
  Result<std::optional<RetainedDelivery>> Lookup(const std::string& id) override;
  Result<std::unique_ptr<PayloadWriter>> Begin(const DeliveryMeta& meta,
                                               RetentionClass retention) override;
  Status AppendReceipt(const std::string& id, const std::string& receipt_json) override;
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override;

 private:
  friend class VolatileWriter;
  struct Entry {
    RetainedDelivery delivery;
    int fd = -1;
  };
  VolatileStore(std::string dir, uint64_t capacity, Env* env)
      : dir_(std::move(dir)), capacity_(capacity), env_(env) {}
  void Release(uint64_t bytes);
  Status ReadFd(int fd, const std::string& id, uint64_t bytes, uint64_t offset,
                std::span<uint8_t> out);
  Status Insert(Entry entry);

  std::string dir_;
  uint64_t capacity_;
  Env* env_;
  std::mutex mu_;
  uint64_t reserved_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace writ::store
