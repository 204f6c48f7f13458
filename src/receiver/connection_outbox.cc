// What a connection sends: messages after the receipts issued before them, receipts signed
// in groups and sent in batches (receipt_outbox.h), and what a failed send means when the
// sender committed and left.
#include <poll.h>

#include <algorithm>

#include "receiver/connection.h"

namespace writ::receiver {

using namespace std::chrono_literals;

Status Connection::Send(const protocol::Message& message) {
  if (const auto* refuse = std::get_if<protocol::Refuse>(&message)) {
    NoteRefusal(core_, *refuse);
    refused_.push_back(*refuse);
  }
  WRIT_RETURN_IF_ERROR(FlushReceipts());  // what was issued before goes first
  return SendNow(message);
}

Status Connection::Refuse(const std::string& id, protocol::RefuseReason reason,
                          const std::string& detail) {
  return Send(protocol::Refuse{id, reason, detail});
}

Status Connection::FlushReceipts() {
  WRIT_RETURN_IF_ERROR(SignIssued().status());
  return SendSigned();
}

Status Connection::SendSigned() {
  for (const protocol::Message& message : outbox_.Take()) WRIT_RETURN_IF_ERROR(SendNow(message));
  return Status::Ok();
}

Result<std::string> Connection::SignIssued(const Receipt* with) {
  receipt::UnsignedReceipt one;
  if (with != nullptr) one = receipt::Unsigned(*with);
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> json,
                        SignIssuedWith(std::span(&one, with != nullptr ? 1 : 0)));
  return json.empty() ? std::string() : std::move(json.front());
}

Result<std::vector<std::string>> Connection::SignIssuedWith(
    std::span<receipt::UnsignedReceipt> with) {
  WRIT_ASSIGN_OR_RETURN(ReceiptOutbox::Signed signed_now, outbox_.SignIssued(*core_.signer, with));
  for (const protocol::Receipt& r : signed_now.issued) {
    auto it = runs_.find(r.delivery_id);
    if (it != runs_.end()) it->second->Record(r.json);
  }
  return std::move(signed_now.with);
}

// The pass's one signature: every rung issued in it, across its deliveries, with the
// `retained` receipt of each volatile run that committed in it; those runs then record it
// and end (each retained receipt sent only once recorded). Under load, fewer than
// kSignGroupTarget waiting runs are left to the next pass while more input waits already
// (`deferred`: nothing issued is signed now), for at most kMaxDeferredPasses passes in a
// row, so that one signature covers more deliveries.
Status Connection::SignPass(bool& deferred) {
  deferred = false;
  const auto waiting_count =
      static_cast<size_t>(std::count_if(runs_.begin(), runs_.end(), [](const auto& entry) {
        return entry.second->phase() == RunPhase::kSigning;
      }));
  if (waiting_count == 0) {
    deferred_passes_ = 0;
    return Status::Ok();  // FlushReceipts signs what was issued
  }
  if (waiting_count < kSignGroupTarget && deferred_passes_ < kMaxDeferredPasses && !peer_gone_ &&
      !core_.shutdown.begun() && InputWaiting()) {
    ++deferred_passes_;
    deferred = true;
    return Status::Ok();
  }
  deferred_passes_ = 0;
  std::vector<InboundRun*> waiting;
  std::vector<receipt::UnsignedReceipt> retained;
  waiting.reserve(waiting_count);
  retained.reserve(waiting_count);
  for (auto& entry : runs_) {
    std::optional<receipt::UnsignedReceipt> receipt = entry.second->TakeReceiptToSign();
    if (!receipt) continue;
    waiting.push_back(entry.second.get());
    retained.push_back(std::move(*receipt));
  }
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> json, SignIssuedWith(retained));
  Status status;
  for (size_t i = 0; i < waiting.size(); ++i) {
    Status ended = Settle(*waiting[i], waiting[i]->OnRetainedSigned(std::move(json[i])));
    if (status.ok()) status = ended;
  }
  return status;
}

bool Connection::InputWaiting() const {
  if (inbox_->HasValues()) return true;  // pushed while this thread was awake: not raised
  pollfd fds[2] = {{channel_.fd(), POLLIN, 0}, {inbox_->event_fd(), POLLIN, 0}};
  return poll(fds, 2, 0) > 0;
}

Status Connection::SendNow(const protocol::Message& message) {
  // A sender that committed and left (e.g. --until transport) still gets its delivery
  // validated and retained; there is just nobody to tell.
  if (peer_gone_) return Status::Ok();
  Status sent = channel_.Send(message);
  if (sent.ok() || sent.code() != ErrorCode::kTransport || runs_.empty()) return sent;
  return SendFailed(sent);
}

Status Connection::SendCorked() {
  Status sent = channel_.Uncork();
  if (peer_gone_ || sent.ok() || sent.code() != ErrorCode::kTransport || runs_.empty()) {
    return peer_gone_ ? Status::Ok() : sent;
  }
  return SendFailed(sent);
}

Status Connection::SendFailed(const Status& sent) {
  // The sender may have committed and closed before this receiver read the close (or
  // even the commit): a commit still buffered counts, and then its delivery goes on.
  for (auto m = channel_.Receive(0ms); m.ok(); m = channel_.Receive(0ms)) {
    const auto* commit = std::get_if<protocol::Commit>(&*m);
    auto it = commit != nullptr ? runs_.find(commit->delivery_id) : runs_.end();
    if (it != runs_.end()) it->second->TakeBufferedCommit(*commit);
  }
  if (!AnyCommitted()) return sent;
  peer_gone_ = true;  // the uncommitted ones end in the connection's loop (DropUncommitted)
  return Status::Ok();
}

bool Connection::AnyCommitted() const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [](const auto& entry) { return entry.second->committed(); });
}

Status Connection::DropUncommitted() {
  Status status;
  for (auto it = runs_.begin(); it != runs_.end();) {
    InboundRun& run = *(it++)->second;  // Settle erases only `run`
    if (run.committed()) continue;
    const std::string why =
        "delivery " + run.id() + " aborted: the sender closed its connection before committing it";
    Tell(why);
    Status ended = Settle(run, run.EndWith(RunEnding::Aborted(why)));
    if (status.ok()) status = ended;
  }
  return status;
}

}  // namespace writ::receiver
