#include "receiver/receipt_outbox.h"

#include <algorithm>
#include <iterator>

namespace writ::receiver {

void ReceiptOutbox::Add(std::string delivery_id, std::string json) {
  pending_.push_back(protocol::Receipt{std::move(delivery_id), std::move(json)});
}

Result<ReceiptOutbox::Signed> ReceiptOutbox::SignIssued(ReceiptSigner& signer,
                                                        std::span<receipt::UnsignedReceipt> with) {
  Signed out;
  if (issued_.empty() && with.empty()) return out;
  const size_t issued = issued_.size();
  for (receipt::UnsignedReceipt& text : with) issued_.push_back(std::move(text));
  // Cleared, not swapped away: the vectors keep their capacity from one signing to the next.
  Result<std::vector<std::string>> json = signer.Sign(issued_);
  issued_.clear();
  if (!json.ok()) {
    issued_ids_.clear();
    return json.status();
  }
  const size_t first = pending_.size();
  for (size_t i = 0; i < issued; ++i) {
    pending_.push_back(protocol::Receipt{std::move(issued_ids_[i]), std::move((*json)[i])});
  }
  issued_ids_.clear();
  json->erase(json->begin(), json->begin() + static_cast<ptrdiff_t>(issued));
  out.with = std::move(json).value();
  out.issued = std::span<const protocol::Receipt>(pending_).subspan(first);
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
