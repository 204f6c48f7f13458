// One control connection: Hello, then announces, grants, commits, queries.
// Runs on its own thread; the fabric progress thread feeds it notifications.
// Carries up to the hello's `max_in_flight` deliveries at once, each its own InProgress;
// every message, notification and timeout is routed to the delivery it names.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/control_channel.h"
#include "receiver/admission.h"
#include "receiver/delivery_log.h"
#include "receiver/inbound_delivery.h"
#include "receiver/notification_router.h"
#include "receiver/receipt_outbox.h"
#include "receiver/receiver_core.h"
#include "receiver/standing_ring.h"

namespace writ::receiver {

// One delivery in progress on a connection, with what it holds and its own clocks.
struct InProgress {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<InboundDelivery> delivery;
  std::optional<AdmittedDelivery> admitted;  // the id and limit `delivery` holds
  std::vector<std::string> receipts;         // issued for it, JSON
  // When it last moved (announce, grant, chunk landed, commit), since when it waits for
  // a window and what the last grant attempt found missing.
  Clock::time_point last_progress;
  std::optional<Clock::time_point> window_wait_since;
  std::string window_wait_why;
  // A delivery written into a ring slot (`deliver`): the slot, and whether its bytes were
  // copied out (the slot is given back then).
  std::optional<uint32_t> ring_slot;
  bool slot_copied = false;
};

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  Connection(ReceiverCore& core, protocol::ControlChannel channel);
  ~Connection();

  void Run();
  void Shutdown() { channel_.Shutdown(); }
  bool finished() const { return finished_.load(); }
  // Since when this connection has had no delivery in progress (the accept loop makes room
  // by closing the connection idle longest); nullopt while any delivery is in progress.
  std::optional<Clock::time_point> idle_since() const;

 private:
  // Sends the hello; false when the connection cannot start.
  bool Start();
  // Reads every complete message that arrived; `close` when the connection must end.
  // Tells the receiver's shutdown (which waits for connections to end) that this one has.
  void MarkFinished();
  Status ReadMessages(bool& close);
  Status HandleMessage(const protocol::Message& message);
  // `bytes_in_slot`: the announce of a `deliver`, whose bytes move whatever the store holds.
  Status OnAnnounce(const protocol::Announce& announce, bool bytes_in_slot = false);
  Status AdmitAnnounce(const protocol::Announce& announce, bool bytes_in_slot);
  // Standing windows (standing_ring.h): a `deliver` admitted as its announce is, its commit
  // taken at once; its bytes are copied out of the slot once both it and the write's
  // notification are in.
  Status OnDeliver(const protocol::Deliver& deliver);
  Status TakeDeliver(const protocol::Deliver& deliver);
  // Grants the connection's ring once a delivery of it was admitted (ReceiverOptions::ring_slots).
  Status MaybeGrantRing();
  Status OnRingNotification(uint32_t slot);
  Status ConsumeSlot(const std::string& id);
  // Tells the sender which slots are free again.
  Status SendFreedSlots();
  // Once shutting down: an idle connection closes; at the drain deadline, so does one
  // with deliveries, each refused and ended first.
  Status ObserveShutdown(bool& close);
  // Tells the sender (and the log) that delivery `id` was ended by the shutdown.
  Status AbortForShutdown(const std::string& id);
  // Admission's steps (admission.h), in order: who the sender is, then what it asks for.
  // A refusal when refused.
  std::optional<protocol::Refuse> CheckSender(const protocol::Announce& a);
  std::optional<protocol::Refuse> CountConnection(const protocol::Announce& a,
                                                  const std::string& key);
  std::optional<protocol::Refuse> CheckSenderAddress(const protocol::Announce& a);
  std::optional<protocol::Refuse> CheckRequest(const protocol::Announce& a) const;
  // Opens the store's writer for a delivery that holds `admitted` (its id and place).
  // `upgrade`: the store holds the id in a weaker class; this copy supersedes it.
  Status BeginDelivery(const protocol::Announce& a, AdmittedDelivery admitted, bool redelivery,
                       bool upgrade);
  Status OnCommit(const protocol::Commit& commit);
  void TakeCommit(InProgress& p, const protocol::Commit& commit);
  Status OnQuery(const protocol::Query& query);
  Status ApplyNotifications();
  // The delivery in progress with this id, or null.
  InProgress* Find(const std::string& id);
  // Advances every delivery in progress (a delivery may end while others go on).
  Status AdvanceAll();
  // Grants windows, consumes chunks, and finishes delivery `id` when it can.
  Status Advance(const std::string& id);
  Status GrantWindows(const std::string& id);
  Status GrantOne(const std::string& id, const WindowPool::Window& window, uint16_t tag,
                  Reservation slot);
  Status Finish(const std::string& id);
  Status Process(InProgress& p, const protocol::Announce& a, const DeliveryRef& ref, bool& refused);
  Status AnswerFromStore(const protocol::Announce& announce);
  Status CheckUpgradeContent(const protocol::Announce& announce);
  // ReceiverOptions::out_dir: the validated bytes, then the receipts, as files (out_dir.h);
  // each Ok when there is no out_dir. A failure is refused by RefuseOut.
  Status PublishOut(InProgress& p);
  Status PublishOutReceiptsOf(const protocol::Announce& announce,
                              const std::vector<std::string>& receipts);
  Status RefuseOut(const std::string& id, const Status& failed);
  // The handshake, idle, grant-unused and window-wait timeouts (ReceiverOptions).
  Status CheckTimeouts(bool& close);
  Status CheckDeliveryTimeouts(const std::string& id, Clock::time_point now);
  Clock::time_point NextDeadline() const;
  // Sends what the outbox holds first, so messages leave in the order they were issued.
  Status Send(const protocol::Message& message);
  Status SendNow(const protocol::Message& message);
  // The receipts issued since the last flush, in one message where they are several.
  Status FlushReceipts();
  static Clock::time_point DeadlineOf(const InProgress& p, const ReceiverOptions& opt);
  // Writes what was corked (ControlChannel::Cork), handling a failure as SendNow does.
  Status SendCorked();
  // After a failed send: a sender that committed and left still gets its committed
  // deliveries finished (peer_gone_); Ok when there is one.
  Status SendFailed(const Status& sent);
  // Once the sender is gone: ends every delivery it had not committed.
  void DropUncommitted();
  Status Refuse(const std::string& id, protocol::RefuseReason reason, const std::string& detail);
  // Signs the receipts issued since the last signing, and `with` (last), as one group
  // with the receiver's identity (ReceiptSigner: also grouped with other connections'
  // receipts ready meanwhile); records each with its delivery and queues it to send.
  // `with`'s JSON, which is neither recorded nor queued.
  Result<std::string> SignIssued(const Receipt* with = nullptr);
  // A rung reached: noted, and issued to be signed with the others reached in this pass.
  Status SendReceipt(InProgress& p, Receipt receipt);
  void Revoke(LiveWindow& window);
  void EndDelivery(const std::string& id);
  void EndAllDeliveries();
  // Tells the log that every delivery in progress was aborted, and why.
  void TellAborted(const std::string& why) const;
  void Tell(const std::string& line) const;
  // The log's and the metrics' view of deliveries ending (delivery_log.h): each that ends
  // is noted, its outcome named by a refusal or a success, and reported once the loop's
  // turn is over (a refusal may be sent before or after its delivery ends).
  void NoteRetained(const std::string& id);
  void ReportEndedDeliveries();

  ReceiverCore& core_;
  protocol::ControlChannel channel_;
  std::shared_ptr<Inbox> inbox_;
  // Deliveries in progress, by id; an id is in progress on one connection at a time.
  std::map<std::string, InProgress> deliveries_;
  std::map<uint16_t, std::string> tag_owner_;  // notification tag -> its delivery
  std::unique_ptr<StandingRing> ring_;         // granted at the first retained delivery
  bool ring_tried_ = false;
  ReceiptOutbox outbox_;  // issued or signed, not yet sent
  std::vector<uint32_t> notifications_;
  std::atomic<bool> finished_{false};
  bool peer_gone_ = false;  // the sender closed after committing
  std::optional<Result<uid_t>> peer_uid_;
  // The sender's fabric end, the only writer whose notifications count for this connection:
  // on RDM its endpoint, in this receiver's address vector while the connection lasts (shm
  // serves at most 256 peers per endpoint: each must be removed again); on MSG its accepted
  // fabric connection.
  std::optional<fabric::Peer> sender_peer_;
  // Whose notifications count: the sender's fabric end, or nobody's while it named none.
  fabric::Peer Writer() const { return sender_peer_.value_or(fabric::Peer{}); }
  std::string sender_;                          // whom the per-sender limits count against
  std::optional<Reservation> connection_slot_;  // in its sender key's limit, once signed
  std::string identity_;  // the key id of the announce being admitted; empty if unsigned
  // Liveness: when the connection started, when its last message came.
  Clock::time_point started_;
  std::optional<Clock::time_point> last_message_;
  std::atomic<int64_t> idle_since_ns_{0};  // 0 while any delivery is in progress
  std::vector<EndedDelivery> ended_;       // since the last ReportEndedDeliveries
  std::vector<protocol::Refuse> refused_;  // likewise
  mutable std::string end_why_;            // why the delivery that ends next ended, if told
};

}  // namespace writ::receiver
