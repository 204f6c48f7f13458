#include "receiver/connection.h"

#include <poll.h>

#include <algorithm>

#include "receiver/query_answer.h"
#include "receiver/remote_removal.h"

namespace writ::receiver {

using protocol::RefuseReason;
using namespace std::chrono_literals;

Connection::Connection(ReceiverCore& core, protocol::ControlChannel channel)
    : core_(core), channel_(std::move(channel)), started_(Clock::now()) {
  // Until senders authenticate, a sender is its host.
  const std::string& peer = channel_.peer();
  sender_ = peer.substr(0, peer.rfind(':'));
  idle_since_ns_ = started_.time_since_epoch().count();
}

Connection::~Connection() { EndAll(); }

std::optional<Connection::Clock::time_point> Connection::idle_since() const {
  const int64_t ns = idle_since_ns_.load();
  if (ns == 0) return std::nullopt;
  return Clock::time_point(Clock::duration(ns));
}

void Connection::Tell(const std::string& line) {
  if (core_.options.on_connection_event) core_.options.on_connection_event(line);
}

bool Connection::Start() {
  auto inbox = Inbox::Create();
  if (!inbox.ok()) return false;
  inbox_ = *inbox;
  protocol::Hello hello;
  hello.provider = core_.node->provider().name();
  hello.fabric_address = core_.fabric_address;
  hello.receiver_id = core_.signing_id;
  hello.max_in_flight = std::max<uint32_t>(1, std::min(core_.options.max_deliveries_per_connection,
                                                       core_.options.max_deliveries_per_sender));
  return channel_.Send(hello).ok();
}

void Connection::Run() {
  if (!Start()) {
    MarkFinished();
    return;
  }
  core_.connections_running.fetch_add(1);
  std::vector<pollfd> fds;
  for (;;) {
    if (peer_gone_ && runs_.empty()) break;
    FollowOrLead();
    if (!WaitForWork(fds)) break;
    bool close = false;
    Status status = Turn((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0,
                         (fds[1].revents & POLLIN) != 0, close);
    if (!status.ok()) TellAborted(status.message());
    ReportEndedDeliveries();
    if (!status.ok() || close) break;
  }
  if (leading_) core_.progress->Resign();
  leading_ = false;
  core_.connections_running.fetch_sub(1);
  EndAll();
  ReportEndedDeliveries();
  ring_.reset();  // revoked before the sender's address is forgotten
  if (sender_peer_) (void)core_.node->RemovePeer(*sender_peer_);
  core_.pool->ForgetWaiter(inbox_->event_fd());
  channel_.Shutdown();
  MarkFinished();
}

bool Connection::WaitForWork(std::vector<pollfd>& fds) {
  // Woken by a message, a notification, or the next deadline of a timeout.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(NextDeadline() - Clock::now());
  // While the receiver shuts down, its phase is looked at often (nothing else wakes us).
  const int64_t most = core_.shutdown.begun() ? 50 : 500;
  int wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, most));
  fds.assign({{peer_gone_ ? -1 : channel_.fd(), POLLIN, 0}, {inbox_->event_fd(), POLLIN, 0}});
  if (leading_) {
    auto prepared = core_.progress->LeadPrepareWait(fds);
    if (!prepared.ok() || !*prepared) wait_ms = 0;  // a queue has records: read them first
  }
  // Notifications already queued: only look whether a message waits too.
  const bool work_waiting = !inbox_->Sleep() || wait_ms == 0;
  const auto before = Clock::now();
  const int ready = poll(fds.data(), fds.size(), work_waiting ? 0 : wait_ms);
  inbox_->Awake();
  if (ready < 0 && errno != EINTR) return false;
  lead_policy_.AfterWait(leading_, work_waiting, Clock::now() - before);
  if (leading_) (void)core_.progress->LeadPoll();  // its records are routed, ours to our inbox
  return true;
}

void Connection::FollowOrLead() {
  if (core_.progress == nullptr) return;
  const bool may_lead =
      lead_policy_.MayLead(core_.connections_running.load(), core_.fabric.failed());
  if (leading_ && !may_lead) {
    core_.progress->Resign();
    leading_ = false;
  } else if (!leading_ && may_lead && !may_lead_) {
    leading_ = core_.progress->TryLead();  // tried once each time it comes to be allowed
  }
  may_lead_ = may_lead;
}

void Connection::NeedFabricThread() {
  lead_policy_.NeedFabricThread();
  if (!leading_) return;
  core_.progress->Resign();
  leading_ = false;
}

Status Connection::Turn(bool readable, bool signaled, bool& close) {
  Status status = ApplyNotifications(signaled);
  if (status.ok() && readable) status = ReadMessages(close);
  if (status.ok() && peer_gone_) status = DropUncommitted();
  if (status.ok() && !close) status = AdvanceAll();
  channel_.Cork();  // the freed slots and every receipt of this pass leave in one write
  if (status.ok()) status = SendFreedSlots();  // before the receipts: the next one may wait
  bool deferred = false;
  if (status.ok()) status = SignPass(deferred);
  if (status.ok()) status = deferred ? SendSigned() : FlushReceipts();
  if (Status sent = SendCorked(); status.ok()) status = sent;
  if (status.ok() && !close) status = CheckTimeouts(close);
  if (status.ok() && !close) status = ObserveShutdown(close);
  if (status.ok() && !close) status = ObserveFabric();
  return status;
}

void Connection::MarkFinished() {
  finished_ = true;
  core_.shutdown.NoteConnectionEnded();
}

Status Connection::ReadMessages(bool& close) {
  // Only what has arrived: a frame sent a byte at a time never holds this thread, and its
  // bytes are kept for the next call (the timeouts bound how long that may go on).
  Status status;
  auto message = channel_.Receive(0ms);
  while (message.ok() && status.ok()) {
    last_message_ = Clock::now();
    status = HandleMessage(*message);
    if (status.ok()) message = channel_.Receive(0ms);
  }
  if (!status.ok() || message.ok()) return status;
  const ErrorCode code = message.status().code();
  if (code == ErrorCode::kTimeout) return Status::Ok();
  if (code == ErrorCode::kTransport && AnyCommitted()) {
    peer_gone_ = true;  // finish the committed deliveries without the sender
    return Status::Ok();
  }
  if (code == ErrorCode::kMalformed || code == ErrorCode::kUnsupported) {
    // Name what was wrong, then drop the connection: its stream can't be trusted. The
    // refusal names the delivery when there is exactly one.
    const std::string id = runs_.size() == 1 ? runs_.begin()->first : "";
    const protocol::Refuse refuse{id, RefuseReason::kMalformed, message.status().message()};
    NoteRefusal(core_, refuse);
    refused_.push_back(refuse);
    (void)channel_.Send(refuse);
  }
  TellAborted(message.status().message());
  close = true;
  return Status::Ok();
}

Status Connection::HandleMessage(protocol::Message& message) {
  if (auto* m = std::get_if<protocol::Announce>(&message))
    return OnAnnounce(std::move(*m)).status();
  if (const auto* m = std::get_if<protocol::Commit>(&message)) return OnCommit(*m);
  if (auto* m = std::get_if<protocol::Deliver>(&message)) return OnDeliver(*m);
  if (const auto* m = std::get_if<protocol::Written>(&message)) return OnWritten(*m);
  if (const auto* m = std::get_if<protocol::Query>(&message)) return Send(AnswerQuery(core_, *m));
  // `writ rm`: answered whole by remote_removal.cc.
  if (const auto* m = std::get_if<protocol::Remove>(&message)) return Send(AnswerRemove(core_, *m));
  if (const auto* m = std::get_if<protocol::Abort>(&message)) return OnAbort(*m);
  return Refuse("", RefuseReason::kMalformed,
                std::string("a receiver does not accept '") +
                    std::string(protocol::MessageTypeName(message)) + "' messages");
}

Status Connection::OnCommit(const protocol::Commit& c) {
  auto it = runs_.find(c.delivery_id);
  if (it == runs_.end()) {
    return Refuse(c.delivery_id, RefuseReason::kUnknownDelivery,
                  "commit for " + c.delivery_id + ", which is not in progress on this connection");
  }
  return Settle(*it->second, it->second->OnCommit(c));
}

// A late `written` (its delivery ended meanwhile, refused or aborted) changes nothing.
Status Connection::OnWritten(const protocol::Written& m) {
  auto it = runs_.find(m.delivery_id);
  if (it == runs_.end()) return Status::Ok();
  return Settle(*it->second, it->second->OnWritten(m));
}

Status Connection::OnAbort(const protocol::Abort& m) {
  auto it = runs_.find(m.delivery_id);
  if (it == runs_.end()) return Status::Ok();  // not in progress here: nothing to end
  // Retained already, its receipt being signed in this pass: too late to abort.
  if (it->second->phase() == RunPhase::kSigning) return Status::Ok();
  return Settle(*it->second, it->second->EndWith(RunEnding::Aborted("the sender aborted it")));
}

Status Connection::ApplyNotifications(bool signaled) {
  notifications_.clear();
  inbox_->Drain(notifications_, signaled);
  for (uint32_t value : notifications_) {
    const auto tag = static_cast<uint16_t>(value >> 16);
    const auto chunk = static_cast<uint16_t>(value & 0xFFFF);
    if (ring_ && tag == ring_->tag()) {
      WRIT_RETURN_IF_ERROR(OnRingNotification(chunk));
      continue;
    }
    auto owner = tag_owners_.find(tag);
    if (owner == tag_owners_.end()) continue;  // a late notification of an ended run
    InboundRun& run = *owner->second;
    WRIT_RETURN_IF_ERROR(Settle(run, run.OnNotification(tag, chunk)));
  }
  return Status::Ok();
}

// Advances every run (a run may end while others go on).
Status Connection::AdvanceAll() {
  for (auto it = runs_.begin(); it != runs_.end();) {
    InboundRun& run = *(it++)->second;  // Settle erases only `run`
    WRIT_RETURN_IF_ERROR(Settle(run, run.Advance()));
  }
  return Status::Ok();
}

Status Connection::Settle(InboundRun& run, RunStep step) {
  if (!step.ended) return step.status;
  ended_.push_back(run.Ended(identity_, channel_.peer()));
  runs_.erase(std::string(run.id()));
  if (!runs_.empty()) return step.status;
  lead_policy_.RunsEnded();
  core_.pool->ForgetWaiter(inbox_->event_fd());  // no longer waits for a window
  // The connection is idle from now: the idle timeout counts from the end of its runs.
  last_message_ = Clock::now();
  idle_since_ns_ = last_message_->time_since_epoch().count();
  return step.status;
}

void Connection::EndAll() {
  while (!runs_.empty()) {
    InboundRun& run = *runs_.begin()->second;
    const std::string why =
        abort_why_.empty() ? "" : "delivery " + run.id() + " aborted: " + abort_why_;
    (void)Settle(run, run.EndWith(RunEnding::Aborted(why)));
  }
}

void Connection::TellAborted(const std::string& why) {
  for (const auto& entry : runs_) Tell("delivery " + entry.first + " aborted: " + why);
  if (!runs_.empty()) abort_why_ = why;
}

void Connection::ReportEndedDeliveries() {
  for (EndedDelivery& d : ended_) {
    // A refusal sent apart from its run's end (a malformed stream names its one run).
    for (const protocol::Refuse& r : refused_) {
      if (r.delivery_id != d.id || d.outcome != DeliveryOutcome::kAborted) continue;
      d.outcome = DeliveryOutcome::kRefused;
      d.reason = protocol::RefuseReasonName(r.reason);
      d.detail = r.detail;
    }
    ReportEnded(core_, d);
  }
  ended_.clear();
  refused_.clear();
}

}  // namespace writ::receiver
