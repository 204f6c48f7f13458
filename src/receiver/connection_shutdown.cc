// A connection's part in the receiver's shutdown (ShutdownState, Receiver::Shutdown).
#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

Status Connection::ObserveShutdown(bool& close) {
  if (!core_.shutdown.begun()) return Status::Ok();
  if (!deliveries_.empty()) {
    if (!core_.shutdown.aborting()) return Status::Ok();  // draining: they may still finish
    close = true;
    Status told;
    while (!deliveries_.empty()) {
      const std::string id = deliveries_.begin()->first;
      // Told before the windows are revoked, so the sender reads why before a write fails.
      Status one = AbortForShutdown(id);
      if (told.ok()) told = one;
      EndDelivery(id);  // its uncommitted bytes are discarded; nothing is retained
    }
    return told;
  }
  close = true;
  Tell("connection from " + channel_.peer() + " closed: the receiver is shutting down");
  return Refuse("", RefuseReason::kShuttingDown,
                "connection closed: the receiver is shutting down");
}

Status Connection::AbortForShutdown(const std::string& id) {
  const std::string why = "delivery " + id + " aborted: the receiver is shutting down and its " +
                          std::to_string(core_.shutdown.drain_ms()) +
                          " ms drain deadline passed first; nothing of it was retained";
  Tell(why);
  core_.shutdown.NoteAborted(id);
  return Refuse(id, RefuseReason::kShuttingDown, why);
}

}  // namespace writ::receiver
