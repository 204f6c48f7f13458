#include "receiver/receipt_outbox.h"

#include <algorithm>

namespace writ::receiver {

void ReceiptOutbox::Add(std::string delivery_id, std::string json) {
  pending_.push_back(protocol::Receipt{std::move(delivery_id), std::move(json)});
}

Result<ReceiptOutbox::Signed> ReceiptOutbox::SignIssued(ReceiptSigner& signer,
                                                        const Receipt* with) {
  Signed out;
  if (issued_.empty() && with == nullptr) return out;
  std::vector<Receipt> group;
  group.swap(issued_);
  std::vector<std::string> ids;
  for (const Receipt& r : group) ids.push_back(r.delivery.id);
  if (with != nullptr) group.push_back(*with);
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> json, signer.Sign(std::move(group)));
  if (with != nullptr) {
    out.with = std::move(json.back());
    json.pop_back();
  }
  for (size_t i = 0; i < json.size(); ++i) {
    out.issued.push_back(protocol::Receipt{ids[i], json[i]});
    pending_.push_back(protocol::Receipt{ids[i], std::move(json[i])});
  }
  return out;
}

std::vector<protocol::Message> ReceiptOutbox::Take() {
  std::vector<protocol::Message> out;
  if (pending_.size() == 1) out.emplace_back(std::move(pending_.front()));
  for (size_t begin = 0; pending_.size() > 1 && begin < pending_.size();) {
    const size_t end = std::min(pending_.size(), begin + protocol::kMaxReceiptsPerMessage);
    protocol::Receipts batch;
    for (size_t i = begin; i < end; ++i) batch.receipts.push_back(std::move(pending_[i]));
    // A lone receipt left over keeps the plain form.
    if (batch.receipts.size() == 1) {
      out.emplace_back(std::move(batch.receipts.front()));
    } else {
      out.emplace_back(std::move(batch));
    }
    begin = end;
  }
  pending_.clear();
  return out;
}

}  // namespace writ::receiver
