// The writer of a re-delivery: a delivery the store already retains, sent again by a
// sender that is not the one that delivered it. Knowing a delivery's id and digest is not
// holding its bytes, so such a sender must move them; they are digested and validated like
// any delivery's, then dropped, since the store holds the same bytes already. What a
// processing step reads is the retained copy (the same bytes: their digest just matched).
#pragma once

#include <string>

#include "store/store.h"

namespace writ::receiver {

class HeldDeliveryWriter : public store::PayloadWriter {
 public:
  HeldDeliveryWriter(store::Store& store, std::string id) : store_(store), id_(std::move(id)) {}

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    (void)offset;
    (void)bytes;  // validated by the digest the caller feeds; the store has them already
    return Status::Ok();
  }
  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    return store_.Read(id_, offset, out);
  }
  void SetDigest(std::vector<uint8_t> digest) override {
    (void)digest;  // the retained delivery's own is compared when the receiver answers
  }
  // Nothing to commit: the receiver answers with the retained delivery's own receipts.
  Result<store::RetentionEvidence> Commit(const std::vector<std::string>& receipts) override {
    (void)receipts;
    return Status::Internal("re-delivery of " + id_ +
                            ": the store already retains it; nothing is committed");
  }

 private:
  store::Store& store_;
  std::string id_;
};

}  // namespace writ::receiver
