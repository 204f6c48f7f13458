#include "receiver/receipt_outbox.h"

#include <algorithm>
#include <iterator>

namespace writ::receiver {

void ReceiptOutbox::Add(std::string delivery_id, std::string json) {
  pending_.push_back(protocol::Receipt{std::move(delivery_id), std::move(json)});
}

Result<ReceiptOutbox::Signed> ReceiptOutbox::SignIssued(
    ReceiptSigner& signer, std::vector<receipt::UnsignedReceipt> with) {
  Signed out;
  if (issued_.empty() && with.empty()) return out;
  std::vector<receipt::UnsignedReceipt> group;
  group.swap(issued_);
  std::vector<std::string> ids;
  ids.swap(issued_ids_);
  const size_t issued = group.size();
  group.reserve(issued + with.size());
  group.insert(group.end(), std::make_move_iterator(with.begin()),
               std::make_move_iterator(with.end()));
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> json, signer.Sign(std::move(group)));
  out.with.assign(std::make_move_iterator(json.begin() + static_cast<ptrdiff_t>(issued)),
                  std::make_move_iterator(json.end()));
  json.resize(issued);
  out.issued.reserve(issued);
  pending_.reserve(pending_.size() + issued);
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
