// Group signing for a whole receiver: receipts that become ready while a signature is
// being computed are signed together, with one Ed25519 signature over the root of a
// Merkle tree of them (receipt/merkle.h). A caller that finds no signature under way
// signs at once (a lone receipt pays one signature and no added wait); callers that
// arrive meanwhile queue, and the first of them signs everything queued as one group
// when the signature under way is done. No thread of its own: the signer is always one
// of the callers (group commit).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "receipt/identity.h"
#include "receipt/signing.h"
#include "writ/receipt.h"

namespace writ::receiver {

class ReceiptSigner {
 public:
  // Tests: called by the signing caller with the group's size before it signs.
  using BeforeSign = std::function<void(size_t receipts)>;

  explicit ReceiptSigner(const receipt::Identity& identity, BeforeSign before_sign = {});

  // Signs `receipts` (at least one), with whatever other callers submit meanwhile; their
  // canonical JSON, in order, each the string of its unsigned text (left empty). Blocks
  // until they are signed. Thread-safe.
  Result<std::vector<std::string>> Sign(std::span<receipt::UnsignedReceipt> receipts);
  Result<std::string> SignOne(const Receipt& receipt);

  // Receipts signed, and Ed25519 signatures made for them (fewer under load).
  uint64_t receipts_signed() const { return receipts_signed_.load(); }
  uint64_t signatures() const { return signatures_.load(); }
  // Receipts waiting for the signature under way.
  size_t queued() const;

 private:
  struct Request {
    std::span<receipt::UnsignedReceipt> receipts;
    Result<std::vector<std::string>> result = Status::Internal("not signed yet");
    bool done = false;  // under mu_
  };
  // Signs every request of `group` together and fills their results (mu_ not held).
  void SignGroup(const std::vector<Request*>& group);

  const receipt::Identity& identity_;
  BeforeSign before_sign_;
  mutable Mutex mu_;
  std::condition_variable signed_;
  std::vector<Request*> queue_ GUARDED_BY(mu_);
  // The group being signed, swapped with queue_: both keep their capacity. Only the
  // signing caller (signing_) touches it.
  std::vector<Request*> group_;
  std::vector<receipt::UnsignedReceipt> all_;  // several requests' receipts, side by side
  bool signing_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> receipts_signed_{0};
  std::atomic<uint64_t> signatures_{0};
};

}  // namespace writ::receiver
