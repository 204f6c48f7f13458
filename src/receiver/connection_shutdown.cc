// A connection's part in the receiver's shutdown (ShutdownState, Receiver::Shutdown).
#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

Status Connection::ObserveShutdown(bool& close) {
  if (!core_.shutdown.begun()) return Status::Ok();
  if (delivery_) {
    if (!core_.shutdown.aborting()) return Status::Ok();  // draining: it may still finish
    close = true;
    const std::string id = delivery_->announce().delivery_id;
    // Told before the windows are revoked, so the sender reads why before a write fails.
    Status told = AbortForShutdown(id);
    EndDelivery();  // its uncommitted bytes are discarded; nothing is retained
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
