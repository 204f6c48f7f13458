// Receipts one connection has signed but not yet sent: those ready at the same moment
// (the rungs a delivery reached in one pass, or a re-delivery's stored receipts) leave in
// one control message. A lone receipt is a `receipt` message, as before protocol 3.
#pragma once

#include <string>
#include <vector>

#include "protocol/messages.h"

namespace writ::receiver {

class ReceiptOutbox {
 public:
  void Add(std::string delivery_id, std::string json);
  bool empty() const { return pending_.empty(); }
  // What is pending, as messages in issue order: a lone receipt as `receipt`, several as
  // `receipts` of at most protocol::kMaxReceiptsPerMessage each. Empties the outbox.
  std::vector<protocol::Message> Take();

 private:
  std::vector<protocol::Receipt> pending_;
};

}  // namespace writ::receiver
