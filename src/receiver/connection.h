// One control connection: Hello, then announces, deliveries, commits, queries. Runs on its
// own thread; the fabric progress thread feeds it notifications. A multiplexer of inbound
// runs (inbound_run.h): up to the hello's `max_in_flight` at once, each message,
// notification and timeout routed to the run it names, what runs produce sent in batches,
// and a run erased in one place (Settle) once a call on it says it ended.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/control_channel.h"
#include "receiver/delivery_log.h"
#include "receiver/inbound_run.h"
#include "receiver/lead_policy.h"
#include "receiver/notification_router.h"
#include "receiver/receipt_outbox.h"
#include "receiver/receiver_core.h"
#include "receiver/standing_ring.h"

namespace writ::receiver {

class Connection final : public RunHost {
 public:
  using Clock = std::chrono::steady_clock;

  Connection(ReceiverCore& core, protocol::ControlChannel channel);
  ~Connection() override;

  void Run();
  void Shutdown() { channel_.Shutdown(); }
  bool finished() const { return finished_.load(); }
  // Since when this connection has had no delivery in progress (the accept loop makes room
  // by closing the connection idle longest); nullopt while any delivery is in progress.
  std::optional<Clock::time_point> idle_since() const;

  // RunHost (inbound_run.h), for its runs.
  ReceiverCore& core() override { return core_; }
  // Sends what the outbox holds first, so messages leave in the order they were issued.
  Status Send(const protocol::Message& message) override;
  void Issue(const Receipt& receipt) override { outbox_.Issue(receipt); }
  Result<std::string> SignIssued(const Receipt* with = nullptr) override;
  void Queue(const std::string& id, std::string json) override { outbox_.Add(id, std::move(json)); }
  // The receipts issued since the last flush, in one message where they are several.
  Status FlushReceipts() override;
  void Tell(const std::string& line) override;
  Status GrantRingOnce() override;
  const std::string& sender() const override { return sender_; }
  const std::shared_ptr<Inbox>& inbox() const override { return inbox_; }
  // Whose notifications count: the sender's fabric end, or nobody's while it named none.
  fabric::Peer writer() const override { return sender_peer_.value_or(fabric::Peer{}); }
  TagOwners& tag_owners() override { return tag_owners_; }
  bool sender_gone() const override { return peer_gone_; }
  void NeedFabricThread() override;

 private:
  // Sends the hello; false when the connection cannot start.
  bool Start();
  // Leads the receiver's progress loop (ProgressLoop::TryLead) while lead_policy_ allows,
  // and hands it back when it no longer does.
  void FollowOrLead();
  // Blocks until a message, a notification or a deadline (while leading, on the queues'
  // wait objects too, whose records it then reads); `fds` say what woke it. False: poll()
  // failed.
  bool WaitForWork(std::vector<pollfd>& fds);
  // One turn of the loop: what arrived, then what the runs can do, then what they produced.
  // `readable`: the control channel has input; `signaled`: the inbox's eventfd was raised.
  Status Turn(bool readable, bool signaled, bool& close);
  // Tells the receiver's shutdown (which waits for connections to end) that this one has.
  void MarkFinished();
  // Reads every complete message that arrived; `close` when the connection must end.
  Status ReadMessages(bool& close);
  // Consumes what a run keeps (an announce's fields are moved into it).
  Status HandleMessage(protocol::Message& message);
  Status OnCommit(const protocol::Commit& commit);
  Status OnAbort(const protocol::Abort& abort);
  Status OnWritten(const protocol::Written& written);
  Status ApplyNotifications(bool signaled);
  Status AdvanceAll();
  // Where a step on `run` is taken in: an ended run is erased (and reported at the end of
  // the turn); the connection is idle once none is left. The step's status.
  Status Settle(InboundRun& run, RunStep step);
  // Every run ended (the connection ends), as aborted for the reason last told.
  void EndAll();
  // Tells the log that every run in progress was aborted, and why.
  void TellAborted(const std::string& why);
  // The log's and the metrics' view of runs that ended this turn (delivery_log.h).
  void ReportEndedDeliveries();

  // Admission (connection_admission.cc): the checks of admission.h in order, then the
  // claims. The run started, or null when the announce was refused or answered from the
  // store. `bytes_in_slot`: the announce of a `deliver`, whose bytes move whatever the
  // store holds. The announce is moved into the run that starts, if one does (read the id
  // from the run); a refused one is left as it was.
  Result<InboundRun*> OnAnnounce(protocol::Announce&& announce, bool bytes_in_slot = false);
  Result<InboundRun*> AdmitAnnounce(protocol::Announce&& announce, bool bytes_in_slot);
  Result<InboundRun*> AdmitAddressed(protocol::Announce&& a);
  std::optional<protocol::Refuse> CheckSender(const protocol::Announce& a);
  std::optional<protocol::Refuse> CountConnection(const protocol::Announce& a,
                                                  const std::string& key);
  std::optional<protocol::Refuse> CheckSenderAddress(const protocol::Announce& a);
  std::optional<protocol::Refuse> CheckRequest(const protocol::Announce& a) const;
  // Opens the store's writer and starts the run that holds `admitted`.
  Result<InboundRun*> BeginRun(protocol::Announce&& a, AdmittedDelivery admitted,
                               InboundRun::Held held);

  // The standing window (connection_ring.cc): a `deliver`, a slot's write notification,
  // the slots given back.
  Status OnDeliver(protocol::Deliver& deliver);
  Status OnRingNotification(uint32_t slot);
  Status SendFreedSlots();

  // Sending (connection_outbox.cc).
  // SignIssued, with every receipt of `with` (last) in the same group: their JSON, in order.
  Result<std::vector<std::string>> SignIssuedWith(std::span<receipt::UnsignedReceipt> with);
  // The end of a pass: one signature for it (the runs awaiting theirs then end), or, under
  // load, `deferred` to the next pass (connection_outbox.cc).
  Status SignPass(bool& deferred);
  // Sends what the outbox holds signed, leaving what was issued unsigned.
  Status SendSigned();
  // A message or a notification is waiting to be read now.
  bool InputWaiting() const;
  Status SendNow(const protocol::Message& message);
  // Writes what was corked (ControlChannel::Cork), handling a failure as SendNow does.
  Status SendCorked();
  // After a failed send: a sender that committed and left still gets its committed
  // deliveries finished (peer_gone_); Ok when there is one.
  Status SendFailed(const Status& sent);
  // Once the sender is gone: ends every run it had not committed.
  Status DropUncommitted();
  bool AnyCommitted() const;
  Status Refuse(const std::string& id, protocol::RefuseReason reason, const std::string& detail);

  // Timeouts (connection_timeouts.cc): the handshake and idle ones of the connection, and
  // each run's own.
  Status CheckTimeouts(bool& close);
  Clock::time_point NextDeadline() const;
  // Shutdown (connection_shutdown.cc): an idle connection closes; at the drain deadline, so
  // does one with runs, each refused and ended first.
  Status ObserveShutdown(bool& close);
  // Once the receiver's fabric stopped making progress (Receiver::health), every run still
  // waiting for chunks is refused at once, naming it; runs whose chunks all landed go on.
  Status ObserveFabric();

  ReceiverCore& core_;
  protocol::ControlChannel channel_;
  std::shared_ptr<Inbox> inbox_;
  std::unique_ptr<StandingRing> ring_;  // granted at the first retained delivery
  bool ring_tried_ = false;
  TagOwners tag_owners_;  // each live window's tag -> its run (leases.h)
  // Runs in progress, by id (an id is in progress on one connection at a time). After the
  // ring and the tags, so that runs, whose leases name them, end first.
  std::map<std::string, std::unique_ptr<InboundRun>> runs_;
  ReceiptOutbox outbox_;  // issued or signed, not yet sent
  // Signing under load (SignPass): a group waits for this many runs while input waits, for
  // at most this many passes in a row.
  static constexpr size_t kSignGroupTarget = 32;
  static constexpr uint32_t kMaxDeferredPasses = 8;
  uint32_t deferred_passes_ = 0;
  std::vector<uint32_t> notifications_;
  std::atomic<bool> finished_{false};
  bool peer_gone_ = false;  // the sender closed after committing
  LeadPolicy lead_policy_;
  bool leading_ = false;   // FollowOrLead
  bool may_lead_ = false;  // at the last FollowOrLead: it tries to lead when this turns true
  std::optional<Result<uid_t>> peer_uid_;
  // The sender's fabric end, the only writer whose notifications count for this connection:
  // on RDM its endpoint, in this receiver's address vector while the connection lasts (shm
  // serves at most 256 peers per endpoint: each must be removed again); on MSG its accepted
  // fabric connection.
  std::optional<fabric::Peer> sender_peer_;
  std::string sender_;                          // whom the per-sender limits count against
  std::optional<Reservation> connection_slot_;  // in its sender key's limit, once signed
  std::string identity_;  // the key id of the announce being admitted; empty if unsigned
  // Liveness: when the connection started, when its last message came.
  Clock::time_point started_;
  std::optional<Clock::time_point> last_message_;
  std::atomic<int64_t> idle_since_ns_{0};  // 0 while any run is in progress
  std::vector<EndedDelivery> ended_;       // since the last ReportEndedDeliveries
  std::vector<protocol::Refuse> refused_;  // likewise
  std::string abort_why_;                  // why the connection's runs are aborted, if told
};

}  // namespace writ::receiver
