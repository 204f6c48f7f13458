// One inbound delivery, from its admission to its end (docs/architecture.md, "Inbound runs"):
// its phase, its clocks, the receipts issued for it, and every lease it holds: the id claim
// and its place in its sender's limit (AdmittedDelivery), its windows with their tags and
// reservations, or its ring slot (leases.h), and its store writer. A run ends only through
// EndWith, which tells the sender first (a refusal, or the last receipts) and then gives
// every lease back, by their destructors. Its connection (RunHost) routes to it what names
// it and erases it once a call says it ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/messages.h"
#include "receipt/signing.h"
#include "receiver/admission.h"
#include "receiver/delivery_log.h"
#include "receiver/exposed_writer.h"
#include "receiver/inbound_delivery.h"
#include "receiver/leases.h"
#include "receiver/notification_router.h"
#include "receiver/receiver_core.h"
#include "writ/receipt.h"

namespace writ::receiver {

// What a run needs of its connection: where its messages and receipts go, and what it shares
// with the connection's other runs.
class RunHost {
 public:
  virtual ~RunHost() = default;
  virtual ReceiverCore& core() = 0;
  // A message for the sender, after the receipts issued before it; a refusal is also logged.
  virtual Status Send(const protocol::Message& message) = 0;
  // A rung reached: signed with the others reached before the next signing.
  virtual void Issue(const Receipt& receipt) = 0;
  // Signs what was issued, and `with` (last), as one group; records each issued receipt with
  // its run and queues it. `with`'s JSON, neither recorded nor queued.
  virtual Result<std::string> SignIssued(const Receipt* with = nullptr) = 0;
  // A receipt signed already, queued to send.
  virtual void Queue(const std::string& id, std::string json) = 0;
  virtual Status FlushReceipts() = 0;
  // A line for the connection's log.
  virtual void Tell(const std::string& line) = 0;
  // A delivery was retained: the connection's first earns it a ring, told before the receipts.
  virtual Status GrantRingOnce() = 0;
  // Whom per-sender limits count against now, the inbox its tags wake, whose writes count.
  virtual const std::string& sender() const = 0;
  virtual const std::shared_ptr<Inbox>& inbox() const = 0;
  virtual fabric::Peer writer() const = 0;
  virtual TagOwners& tag_owners() = 0;
  // The sender committed and closed its connection.
  virtual bool sender_gone() const = 0;
  // The run is about to keep the connection's thread from the fabric for a while (a
  // window's chunks to land, a processing step, a commit to disk or to replicas): the
  // fabric's own progress thread must poll meanwhile (Connection::FollowOrLead).
  virtual void NeedFabricThread() = 0;
};

enum class RunPhase : uint8_t {
  kAnnounced,   // admitted, its writer open; no window granted yet (it may wait for one)
  kReceiving,   // windows granted, or a ring slot claimed: chunks land and are consumed
  kReceived,    // every chunk landed and was consumed; waits for its digest and its commit
  kValidated,   // the digest matched (`validated` issued)
  kProcessing,  // the processing step runs (ReceiverOptions::processing)
  kCommitting,  // retained by the store, its receipts recorded with it
  kSigning,     // volatile, committed: its `retained` waits for the pass's one signature
  kEnded,       // ended by EndWith; holds nothing
};
std::string_view RunPhaseName(RunPhase phase);

// How a run ends, and what the sender is told before its leases go back.
struct RunEnding {
  DeliveryOutcome outcome = DeliveryOutcome::kAborted;
  std::optional<protocol::Refuse> refusal;  // kRefused: sent
  std::string why;                          // kAborted: the log's line (nothing is sent)
  std::vector<std::string> receipts;        // kRetained: the last receipts, sent
  bool earns_ring = false;                  // kRetained: the connection may grant its ring

  static RunEnding Refused(protocol::Refuse refusal);
  static RunEnding Aborted(std::string why);
  static RunEnding Retained(std::vector<std::string> receipts, bool earns_ring);
};

// What a call on a run did: the status of what it sent (a failure ends the connection), and
// whether the run ended (its connection then erases it).
struct [[nodiscard]] RunStep {
  Status status;
  bool ended = false;
};

class InboundRun {
 public:
  using Clock = std::chrono::steady_clock;
  // Whether the store holds the id already: the same content from another sender (validated,
  // then answered with the held receipts), or a weaker class this copy supersedes.
  enum class Held { kNo, kRedelivery, kUpgrade };

  InboundRun(RunHost& host, std::unique_ptr<InboundDelivery> delivery, AdmittedDelivery admitted,
             Held held);
  // A run still going when destroyed (its connection ended) gives its leases back silently.
  ~InboundRun() = default;
  InboundRun(const InboundRun&) = delete;
  InboundRun& operator=(const InboundRun&) = delete;

  const std::string& id() const { return id_; }
  RunPhase phase() const { return phase_; }
  bool committed() const { return commit_seen_; }
  // An addressed delivery: `writer` (its delivery's) places it in an exposed target.
  void AddressedTo(ExposedWriter* writer) { exposed_ = writer; }
  // A receipt issued for it, signed (RunHost::SignIssued).
  void Record(std::string json) {
    if (receipts_.empty()) receipts_.reserve(kRungsRecorded);  // one allocation, not three
    receipts_.push_back(std::move(json));
  }
  // kSigning: its `retained` receipt, to be signed in its connection's end-of-pass group
  // (once; nullopt in any other phase, or once taken).
  std::optional<receipt::UnsignedReceipt> TakeReceiptToSign();
  // Its `retained` receipt signed: recorded with the delivery, then sent, and the run ended.
  RunStep OnRetainedSigned(std::string json);

  // A commit for it: refused (and the run ended) when unusable, else taken.
  RunStep OnCommit(const protocol::Commit& commit);
  // A commit the connection found buffered after its sender left: taken when usable.
  void TakeBufferedCommit(const protocol::Commit& commit);
  // A `deliver` admitted: committed by its announce (which carried the digest, under the
  // announce's signature when signed), then its ring slot (copied out now if its bytes
  // landed). `landed`: its bytes are in `ring` already.
  RunStep OnDeliver(RingSlotLease slot, const StandingRing& ring, bool landed);
  // Its ring slot's bytes landed: copied out, the slot given back, the copy consumed.
  RunStep OnSlotLanded(const StandingRing& ring);
  // A write notification for one of its windows.
  RunStep OnNotification(uint16_t tag, uint16_t chunk_in_window);
  // Its sender's `written`: chunks of one of its windows whose writes completed (only where
  // notifications name no writer; refused elsewhere, and for a window it does not hold).
  RunStep OnWritten(const protocol::Written& written);
  // Grants windows, consumes chunks, issues the rungs reached, and finishes when it can.
  RunStep Advance();
  // Ends it when a timeout passed (the window wait, grant-unused, a missing commit).
  RunStep CheckTimeouts(Clock::time_point now);
  Clock::time_point Deadline() const;
  // The receiver's drain deadline passed: refused and ended.
  RunStep AbortForShutdown();
  // The one way a run ends: the sender told first, then every lease given back.
  RunStep EndWith(RunEnding ending);
  // For the log and the metrics, once ended: how it ended, as `sender_key` on `peer`.
  EndedDelivery Ended(const std::string& sender_key, const std::string& peer) const;

 private:
  RunStep GrantWindows();
  RunStep GrantOne(LiveWindow live, uint8_t* pool_data);
  RunStep Consume();
  RunStep Finish();
  RunStep Process();
  RunStep CheckUpgradeContent();
  RunStep Commit();
  RunStep AnswerFromStore();
  Status PublishOut();
  Status PublishReceiptsOut(const std::vector<std::string>& receipts);
  RunStep RefuseOut(const Status& failed);
  RunStep Refuse(protocol::RefuseReason reason, std::string detail);
  void TakeCommit(const protocol::Commit& commit);
  void IssueRung(const Receipt& receipt);
  // An addressed delivery's receipt names the target and the range it was written into.
  Receipt& InTarget(Receipt& receipt) const;
  std::optional<RunStep> RefuseIfRevoked();
  void Moved() { last_progress_ = Clock::now(); }
  std::string TimeoutWhy(Clock::time_point now) const;

  RunHost& host_;
  ReceiverCore& core_;
  const std::string id_;
  // What the run reads of the announce after the delivery's own copy (which takes the
  // commit's digest) may be gone: its sizes and what it asked for, not another copy of it.
  struct Announced {
    uint64_t bytes;
    uint64_t chunk_size;
    Rung until;
    RetentionClass retention;
  };
  const Announced announced_;
  const Held held_;
  const uint64_t serial_;  // unique over the receiver's life (WindowPool's owner)
  RunPhase phase_ = RunPhase::kAnnounced;
  std::optional<RunEnding> ending_;
  // Its leases, given back by EndWith (or, should the run be destroyed still going, by its
  // destructor) in the reverse of this order: the engine (its destructor cancels the digest,
  // then revokes and frees its windows and discards an uncommitted writer), the ring slot,
  // and last the id claim and its place in its sender's limit.
  std::optional<AdmittedDelivery> admitted_;
  std::optional<RingSlotLease> ring_slot_;
  std::unique_ptr<InboundDelivery> delivery_;
  ExposedWriter* exposed_ = nullptr;  // delivery_'s writer, for an addressed delivery
  // Received, validated, processed, retained: the most a run records.
  static constexpr size_t kRungsRecorded = 4;
  std::vector<std::string> receipts_;                // issued for it, JSON
  size_t recorded_at_commit_ = 0;                    // how many of them the store's commit recorded
  std::optional<receipt::UnsignedReceipt> to_sign_;  // kSigning: its `retained`, not signed yet
  bool commit_seen_ = false;
  bool received_issued_ = false;
  RungsReached rungs_;
  // When it last moved (announce, grant, chunk landed, commit), since when it waits for a
  // window and what the last grant attempt found missing.
  Clock::time_point last_progress_ = Clock::now();
  std::optional<Clock::time_point> window_wait_since_;
  // Named, not worded: a delivery waiting for a window tries again on every wake-up, and
  // the words are needed only if its wait times out (WindowWaitWhy).
  enum class WindowShortage : uint8_t { kSenderLimit, kPool, kTag };
  WindowShortage window_shortage_ = WindowShortage::kPool;
  std::string WindowWaitWhy() const;
};

}  // namespace writ::receiver
