// A hostile sender built on writ's own fabric and control layers: it announces like a
// real sender, then, for every chunk of every window it is granted, posts a write-with-data
// of zero bytes (the notification without the bytes) and commits. tcp and rxm report no
// length for a remote write, so the receiver sees a chunk's notification and nothing else.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "protocol/messages.h"
#include "sender/link.h"
#include "writ/status.h"

namespace writ::testing {

struct HostileOutcome {
  std::vector<std::string> rungs;            // of the receipts received, in order
  std::vector<size_t> receipts_per_message;  // of each `receipt` / `receipts` message
  std::vector<protocol::Refuse> refusals;
  uint32_t grants = 0;
  uint64_t notifications = 0;  // zero-byte writes-with-data posted and completed
  bool timed_out = false;
};

class NotifyingSender {
 public:
  static Result<std::unique_ptr<NotifyingSender>> Connect(const std::string& to,
                                                          const std::string& provider);
  // Announces `announce` (its sender fabric address filled in) and answers every grant
  // with zero-byte notifications; commits once every chunk was notified. Ends at the
  // first refusal, at a retained receipt, or after `timeout`.
  HostileOutcome Run(protocol::Announce announce, std::chrono::milliseconds timeout);
  sender::Link& link() { return *link_; }

 private:
  Status NotifyWindow(const protocol::Grant& grant, uint64_t chunk_size);
  std::unique_ptr<sender::Link> link_;
};

}  // namespace writ::testing
