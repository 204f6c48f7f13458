// A connection's part in the receiver's shutdown (ShutdownState, Receiver::Shutdown), and in
// the end of its fabric (FabricHealth, Receiver::health).
#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

namespace {

protocol::Refuse FabricStopped(const std::string& id, const std::string& why) {
  return protocol::Refuse{id, RefuseReason::kInternal,
                          "delivery " + id +
                              " ended: this receiver's fabric no longer makes progress, so its "
                              "chunks can never land; send it again once the receiver is "
                              "restarted (" +
                              why + ")"};
}

}  // namespace

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

// A connection's thread looks at least twice a second (its longest wait), so a run waiting
// for chunks is told within that of the failure instead of at its own timeout.
Status Connection::ObserveFabric() {
  if (!core_.fabric.failed() || runs_.empty()) return Status::Ok();
  const std::string why = core_.fabric.status().message();
  Status told;
  for (auto it = runs_.begin(); it != runs_.end();) {
    InboundRun& run = *(it++)->second;  // Settle erases only `run`
    if (run.phase() != RunPhase::kAnnounced && run.phase() != RunPhase::kReceiving) continue;
    Status one = Settle(run, run.EndWith(RunEnding::Refused(FabricStopped(run.id(), why))));
    if (told.ok()) told = one;
  }
  return told;
}

}  // namespace writ::receiver
