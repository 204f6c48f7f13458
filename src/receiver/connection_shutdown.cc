// A connection's part in the receiver's shutdown (ShutdownState, Receiver::Shutdown).
#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

Status Connection::ObserveShutdown(bool& close) {
  if (!core_.shutdown.begun()) return Status::Ok();
  if (!runs_.empty()) {
    if (!core_.shutdown.aborting()) return Status::Ok();  // draining: they may still finish
    close = true;
    Status told;
    while (!runs_.empty()) {
      InboundRun& run = *runs_.begin()->second;
      Status one = Settle(run, run.AbortForShutdown());
      if (told.ok()) told = one;
    }
    return told;
  }
  close = true;
  Tell("connection from " + channel_.peer() + " closed: the receiver is shutting down");
  return Refuse("", RefuseReason::kShuttingDown,
                "connection closed: the receiver is shutting down");
}

}  // namespace writ::receiver
