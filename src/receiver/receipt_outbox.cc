#include "receiver/receipt_outbox.h"

#include <algorithm>

namespace writ::receiver {

void ReceiptOutbox::Add(std::string delivery_id, std::string json) {
  pending_.push_back(protocol::Receipt{std::move(delivery_id), std::move(json)});
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
