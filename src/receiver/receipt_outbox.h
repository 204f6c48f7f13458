// Receipts one connection has issued but not yet sent. Rungs reached before the next
// signing (the rungs a small delivery reached in one pass: `received`, `validated`,
// `retained`) are signed as one group, one Ed25519 signature over their Merkle root
// (ReceiptSigner), each receipt still verifiable alone. Those ready at the same moment
// (or a re-delivery's stored receipts) leave in one control message. A lone receipt is a
// `receipt` message, as before protocol 3.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "protocol/messages.h"
#include "receiver/receipt_signer.h"
#include "writ/receipt.h"

namespace writ::receiver {

class ReceiptOutbox {
 public:
  // A receipt already signed (e.g. one the store holds), queued to send.
  void Add(std::string delivery_id, std::string json);
  // A rung reached: signed with every other one issued before the next SignIssued.
  // Written as its unsigned text at once: the receipt itself is not kept.
  void Issue(const Receipt& receipt) {
    issued_ids_.push_back(receipt.delivery.id);
    issued_.push_back(receipt::Unsigned(receipt));
  }

  struct Signed {
    // Queued to send, in issue order: the queue's own receipts, valid until the outbox
    // changes next.
    std::span<const protocol::Receipt> issued;
    std::vector<std::string> with;  // `with`'s JSON, in order, not queued
  };
  // Signs every issued receipt, and those of `with` (last, their texts taken), as one
  // group; the issued ones are queued to send. `with` is for receipts that may go only once
  // recorded (`retained`).
  Result<Signed> SignIssued(ReceiptSigner& signer, std::span<receipt::UnsignedReceipt> with = {});

  bool empty() const { return pending_.empty() && issued_.empty(); }
  // What is pending, as messages in issue order: a lone receipt as `receipt`, several as
  // `receipts` of at most protocol::kMaxReceiptsPerMessage each. Empties the outbox of
  // signed receipts; call SignIssued first for the issued ones.
  std::vector<protocol::Message> Take();

 private:
  std::vector<receipt::UnsignedReceipt> issued_;  // not signed yet
  std::vector<std::string> issued_ids_;           // their deliveries' ids
  std::vector<protocol::Receipt> pending_;
};

}  // namespace writ::receiver
