// The writer of an addressed delivery (docs/architecture.md, "Exposed targets"): its
// windows are placed in the application's exposed buffer, at the delivery's range, so
// consuming them copies nothing; the digest reads the bytes where they landed. Its commit
// retains nothing in writ's store: the retained receipt says the bytes are in the
// application's buffer, which the application owns. Ended without a commit, it tells the
// application the range is not usable, after its windows were revoked.
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "receiver/exposed_targets.h"
#include "receiver/metrics.h"
#include "store/store.h"

namespace writ::receiver {

class ExposedWriter : public store::PayloadWriter {
 public:
  // `metrics`: counts the bytes consumed in place and copied (may be null).
  ExposedWriter(std::unique_ptr<TargetClaim> claim, std::string delivery_id,
                Metrics* metrics = nullptr)
      : claim_(std::move(claim)), delivery_id_(std::move(delivery_id)), metrics_(metrics) {}
  // Told last, once the run's windows are gone (InboundDelivery's order).
  ~ExposedWriter() override;

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override;
  Result<uint8_t*> Placement(uint64_t offset, uint64_t length) override;
  Status Read(uint64_t offset, std::span<uint8_t> out) override;
  void SetDigest(std::vector<uint8_t> digest) override { (void)digest; }
  Result<store::RetentionEvidence> Commit(const std::vector<std::string>& receipts) override;

  const TargetClaim& claim() const { return *claim_; }
  // Why the delivery ended without its bytes being usable (told to the application).
  void EndedBecause(std::string why) { why_ = std::move(why); }
  // The bytes were validated in place: the application is told once the run ends.
  void MarkValidated() { validated_ = true; }

 private:
  Status InRange(uint64_t offset, uint64_t length) const;

  std::unique_ptr<TargetClaim> claim_;
  std::string delivery_id_;
  Metrics* metrics_;
  std::string why_ = "the delivery ended before its bytes were validated";
  bool validated_ = false;
};

}  // namespace writ::receiver
