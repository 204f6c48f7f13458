#include "receiver/inbound_run.h"

#include <algorithm>

#include "receiver/receiver_receipts.h"
#include "receiver/standing_ring.h"

namespace writ::receiver {

using admission::ReasonFor;
using protocol::RefuseReason;

std::string_view RunPhaseName(RunPhase phase) {
  switch (phase) {
    case RunPhase::kAnnounced: return "announced";
    case RunPhase::kReceiving: return "receiving";
    case RunPhase::kReceived: return "received";
    case RunPhase::kValidated: return "validated";
    case RunPhase::kProcessing: return "processing";
    case RunPhase::kCommitting: return "committing";
    case RunPhase::kSigning: return "signing";
    case RunPhase::kEnded: return "ended";
  }
  return "?";
}

RunEnding RunEnding::Refused(protocol::Refuse refusal) {
  RunEnding e;
  e.outcome = DeliveryOutcome::kRefused;
  e.refusal = std::move(refusal);
  return e;
}

RunEnding RunEnding::Aborted(std::string why) {
  RunEnding e;
  e.why = std::move(why);
  return e;
}

RunEnding RunEnding::Retained(std::vector<std::string> receipts, bool earns_ring) {
  RunEnding e;
  e.outcome = DeliveryOutcome::kRetained;
  e.receipts = std::move(receipts);
  e.earns_ring = earns_ring;
  return e;
}

InboundRun::InboundRun(RunHost& host, std::unique_ptr<InboundDelivery> delivery,
                       AdmittedDelivery admitted, Held held)
    : host_(host),
      core_(host.core()),
      id_(delivery->announce().delivery_id),
      announced_{delivery->announce().bytes, delivery->announce().chunk_size,
                 delivery->announce().until, delivery->announce().retention},
      held_(held),
      serial_(core_.next_delivery_serial.fetch_add(1)),
      admitted_(std::move(admitted)),
      delivery_(std::move(delivery)) {}

RunStep InboundRun::EndWith(RunEnding ending) {
  Status told;
  if (ending.refusal) {
    told = host_.Send(*ending.refusal);
  } else if (ending.outcome == DeliveryOutcome::kRetained) {
    core_.shutdown.NoteDrained(id_);
    if (ending.earns_ring) told = host_.GrantRingOnce();  // told before the receipts
    for (std::string& json : ending.receipts) host_.Queue(id_, std::move(json));
    if (told.ok()) told = host_.FlushReceipts();  // with the rungs reached in the same pass
    rungs_.reached = ReceiptRung::kRetained;
    rungs_.retained = true;
    core_.metrics.RungReached(ReceiptRung::kRetained, SecondsSince(rungs_.announced));
  }
  if (exposed_ != nullptr && ending.outcome != DeliveryOutcome::kRetained) {
    exposed_->EndedBecause(ending.refusal ? ending.refusal->detail : ending.why);
  }
  // Then the leases, in the reverse of the order they are declared in (inbound_run.h); an
  // addressed delivery's application is told last, once its windows are revoked.
  exposed_ = nullptr;
  delivery_.reset();
  ring_slot_.reset();
  admitted_.reset();
  window_wait_since_.reset();
  phase_ = RunPhase::kEnded;
  ending_ = std::move(ending);
  return RunStep{std::move(told), true};
}

RunStep InboundRun::Refuse(RefuseReason reason, std::string detail) {
  return EndWith(RunEnding::Refused(protocol::Refuse{id_, reason, std::move(detail)}));
}

EndedDelivery InboundRun::Ended(const std::string& sender_key, const std::string& peer) const {
  EndedDelivery ended;
  ended.id = id_;
  ended.sender_key = sender_key;
  ended.peer = peer;
  ended.bytes = announced_.bytes;
  ended.retention = announced_.retention;
  ended.reached = rungs_.reached;
  ended.ladder_reached = rungs_.ladder_reached;
  ended.retained = rungs_.retained;
  ended.seconds = SecondsSince(rungs_.announced);
  if (ending_) {
    ended.outcome = ending_->outcome;
    if (ending_->refusal) {
      ended.reason = protocol::RefuseReasonName(ending_->refusal->reason);
      ended.detail = ending_->refusal->detail;
    }
    if (ending_->outcome == DeliveryOutcome::kAborted) ended.detail = ending_->why;
  }
  return ended;
}

RunStep InboundRun::OnCommit(const protocol::Commit& c) {
  if (auto refusal = admission::CommitUsable(delivery_->announce(), c, core_.signing_id)) {
    return EndWith(RunEnding::Refused(*refusal));
  }
  TakeCommit(c);
  Moved();
  return {};
}

void InboundRun::TakeBufferedCommit(const protocol::Commit& c) {
  if (!admission::CommitUsable(delivery_->announce(), c, core_.signing_id)) TakeCommit(c);
}

// A usable commit: its digest is the one the bytes must match when none was announced.
void InboundRun::TakeCommit(const protocol::Commit& c) {
  commit_seen_ = true;
  if (delivery_->digest_known()) return;
  delivery_->AdoptCommittedDigest(c.digest);
  delivery_->writer().SetDigest(c.digest);
}

RunStep InboundRun::OnDeliver(RingSlotLease slot, const StandingRing& ring, bool landed) {
  ring_slot_.emplace(std::move(slot));
  delivery_->ExpectCopy();
  phase_ = RunPhase::kReceiving;
  commit_seen_ = true;  // the digest is the announced one (validate.cc: never empty here)
  Moved();
  if (!landed) return {};
  return OnSlotLanded(ring);
}

// Copied out before anything reads the bytes: the sender can write the slot until the copy,
// so what is digested and stored is the copy; the slot is then cleared and given back.
RunStep InboundRun::OnSlotLanded(const StandingRing& ring) {
  if (!ring_slot_ || ring_slot_->copied()) return {};
  std::vector<uint8_t> bytes = ring.Copy(ring_slot_->slot(), announced_.bytes);
  ring_slot_->Release();
  Moved();
  Status consumed = delivery_->ConsumeCopy(std::move(bytes));
  if (consumed.ok()) return {};
  return Refuse(ReasonFor(consumed), "storing delivery " + id_ + " failed: " + consumed.message());
}

RunStep InboundRun::OnNotification(uint16_t tag, uint16_t chunk_in_window) {
  Moved();
  const bool attested = core_.writes_attested;
  Status s = delivery_->OnLanding(tag, chunk_in_window, Landing::kNotified,
                                  attested ? kNotifiedAndAttested : kNotifiedOnly);
  // Where notifications name no writer, a malformed one may be another peer's forgery: it
  // counts for nothing and refuses nothing.
  if (s.code() == ErrorCode::kMalformed && !attested) {
    return Refuse(RefuseReason::kMalformed, s.message());
  }
  return {};
}

RunStep InboundRun::OnWritten(const protocol::Written& written) {
  if (!core_.writes_attested) {
    return Refuse(RefuseReason::kMalformed,
                  "written for " + id_ +
                      ": this receiver's provider names the writer of every notification, and a "
                      "sender attests nothing");
  }
  Moved();
  for (uint32_t chunk : written.chunks) {
    Status s =
        delivery_->OnLanding(static_cast<uint16_t>(written.window_id), static_cast<uint16_t>(chunk),
                             Landing::kAttested, kNotifiedAndAttested);
    if (!s.ok()) return Refuse(RefuseReason::kMalformed, s.message());
  }
  return {};
}

// Grants windows while the delivery needs them and the pool and limits allow.
RunStep InboundRun::GrantWindows() {
  InboundDelivery& d = *delivery_;
  while (d.NeedsWindow(core_.options.windows_per_delivery)) {
    auto slot = Reservation::Take(core_, host_.sender(), SenderUsage::kWindows);
    if (!slot) {
      window_shortage_ = WindowShortage::kSenderLimit;
      break;
    }
    auto window = core_.pool->TryAcquire(host_.inbox()->event_fd(), d.window_count() > 0, serial_);
    if (!window) {
      window_shortage_ = WindowShortage::kPool;
      break;  // woken through the inbox when one is released
    }
    PoolLease pooled(*core_.pool, window->index);
    auto tag = core_.router.Bind(host_.inbox(), host_.writer());
    if (!tag) {
      window_shortage_ = WindowShortage::kTag;
      break;
    }
    LiveWindow live;
    live.pool = std::move(pooled);
    live.route = TagLease(core_.router, host_.tag_owners(), *tag, *this);
    live.tag = *tag;
    live.slot.emplace(std::move(*slot));
    RunStep granted = GrantOne(std::move(live), window->data);
    if (granted.ended || !granted.status.ok()) return granted;
  }
  // The window wait runs while the delivery holds none; a grant ends it.
  if (d.window_count() > 0 || !d.NeedsWindow(core_.options.windows_per_delivery)) {
    window_wait_since_.reset();
  } else if (!window_wait_since_) {
    window_wait_since_ = Clock::now();
  }
  return {};
}

// One window (`live`: its pool window at `pool_data`, its tag, its place in the sender's
// limit) registered and granted.
RunStep InboundRun::GrantOne(LiveWindow live, uint8_t* pool_data) {
  InboundDelivery& d = *delivery_;
  live.first_chunk = d.next_grant_chunk();
  // A window into a page list ends where the list breaks: one registration per piece.
  uint64_t window_bytes = core_.pool->window_bytes();
  if (exposed_ != nullptr && !exposed_->claim().pages().empty()) {
    window_bytes =
        exposed_->claim().ContiguousFrom(live.first_chunk * announced_.chunk_size, window_bytes);
  }
  live.chunk_count = d.ChunksToGrant(window_bytes);
  live.length = d.BytesForChunks(live.first_chunk, live.chunk_count);
  // Where the store can take the bytes in place (memory-backed volatile retention), the
  // window is the store's own memory and consuming it copies nothing; the pool's window
  // then only counts against the limit of windows in flight. Either way the store's
  // capacity for these bytes is taken now, as the window is granted, not at the announce.
  auto placement = d.writer().Placement(live.first_chunk * announced_.chunk_size, live.length);
  if (placement.ok()) live.data = *placement != nullptr ? *placement : pool_data;
  Result<fabric::MemoryRegion> region =
      placement.ok() ? core_.node->Register(live.data, live.length, fabric::Access::kRemoteWrite)
                     : Result<fabric::MemoryRegion>(placement.status());
  if (!placement.ok()) {
    return Refuse(ReasonFor(placement.status()),
                  "storing delivery " + id_ + " failed: " + placement.status().message());
  }
  if (!region.ok()) return Refuse(RefuseReason::kInternal, region.status().message());
  core_.metrics.WindowRegistered();
  // A window placed in the store's memory exposed none of the pool's bytes.
  if (live.data == pool_data) live.pool.Expose(live.length);
  live.region = std::move(region).value();
  protocol::Grant grant{id_,
                        live.tag,
                        live.region.descriptor().base,
                        live.region.descriptor().key,
                        live.length,
                        live.first_chunk,
                        live.chunk_count};
  d.AddWindow(std::move(live));
  phase_ = RunPhase::kReceiving;
  Moved();
  Status sent = host_.Send(grant);
  host_.NeedFabricThread();  // the window's chunks land while this thread does other work
  if (core_.progress != nullptr) core_.progress->Wake();
  return {sent};
}

// An addressed delivery whose target the application revoked (ExposedTargets::Revoke).
std::optional<RunStep> InboundRun::RefuseIfRevoked() {
  if (exposed_ == nullptr || !exposed_->claim().revoked()) return std::nullopt;
  return Refuse(RefuseReason::kTarget, "target " + exposed_->claim().target() +
                                           " was revoked by the receiver's application; "
                                           "nothing more of delivery " +
                                           id_ + " lands in it");
}

Receipt& InboundRun::InTarget(Receipt& receipt) const {
  if (exposed_ == nullptr) return receipt;
  const TargetClaim& c = exposed_->claim();
  receipt.statement +=
      "; written in place into the application's buffer " + c.target() + ", " + c.Where();
  return receipt;
}

RunStep InboundRun::Advance() {
  if (phase_ == RunPhase::kSigning) return {};  // its connection's signing ends it
  if (auto revoked = RefuseIfRevoked()) return *revoked;
  RunStep step = GrantWindows();
  if (step.ended || !step.status.ok()) return step;
  step = Consume();
  if (step.ended || !step.status.ok()) return step;
  InboundDelivery& d = *delivery_;
  if (d.all_received() && d.all_consumed() && phase_ < RunPhase::kReceived) {
    phase_ = RunPhase::kReceived;
  }
  // A receipt names the delivery's digest: without an announced one, it waits for the commit.
  // A one-chunk delivery that asks for more issues it as its validation is decided, so that
  // `received`, `validated` and `retained` are signed together: one signature for the three.
  const bool finishing = commit_seen_ && d.all_received() && d.all_consumed() && d.all_digested();
  const bool with_validation = d.chunk_count() == 1 && announced_.until > Rung::kReceived;
  if (d.all_received() && !received_issued_ && d.digest_known() &&
      (finishing || !with_validation)) {
    received_issued_ = true;
    IssueRung(InTarget(ReceivedReceipt(core_, d.announce(), d.chunk_count())));
  }
  if (finishing) return Finish();
  return {};
}

RunStep InboundRun::Consume() {
  Status consumed = delivery_->Consume();
  if (!consumed.ok()) {
    // The refusal goes out before the windows are revoked, so the sender reads why (e.g. a
    // full disk: exit 6) before any write in flight fails on a revoked window.
    return Refuse(ReasonFor(consumed),
                  "storing delivery " + id_ + " failed: " + consumed.message());
  }
  // Only windows the workers are done with go back to the pool (and so to another delivery),
  // as the list of them ends here; what was freed is re-granted at once: the sender may be
  // waiting for nothing else.
  if (delivery_->TakeDigested().empty()) return {};
  return GrantWindows();
}

void InboundRun::IssueRung(const Receipt& receipt) {
  NoteRung(core_, rungs_, announced_.bytes, receipt.rung);
  host_.Issue(receipt);
}

namespace {

std::string InboundMs(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

}  // namespace

InboundRun::Clock::time_point InboundRun::Deadline() const {
  const ReceiverOptions& opt = core_.options;
  // The same choice as TimeoutWhy: a run waiting for its first window is bounded by the
  // window wait alone.
  if (window_wait_since_ && delivery_->window_count() == 0) {
    return *window_wait_since_ + opt.window_wait_timeout;
  }
  return last_progress_ + opt.grant_unused_timeout;
}

std::string InboundRun::WindowWaitWhy() const {
  switch (window_shortage_) {
    case WindowShortage::kSenderLimit:
      return "sender " + host_.sender() + " holds its limit of " +
             std::to_string(core_.options.max_windows_per_sender) +
             " windows in its other deliveries";
    case WindowShortage::kPool:
      return "all " + std::to_string(core_.pool->count()) +
             " windows of this receiver are granted to deliveries in progress";
    case WindowShortage::kTag: return "no notification tag is free";
  }
  return "";
}

// A run ends when its granted windows stay unused, when it waits too long for a window, or
// when every chunk landed and the commit does not come.
std::string InboundRun::TimeoutWhy(Clock::time_point now) const {
  const ReceiverOptions& opt = core_.options;
  const InboundDelivery& d = *delivery_;
  if (window_wait_since_ && d.window_count() == 0) {
    if (now - *window_wait_since_ < opt.window_wait_timeout) return "";
    return "no window available for " + InboundMs(opt.window_wait_timeout) +
           " (the window wait timeout): " + WindowWaitWhy() + "; try again later";
  }
  if (now - last_progress_ < opt.grant_unused_timeout) return "";
  const std::string unused = InboundMs(opt.grant_unused_timeout) + " (the grant-unused timeout)";
  if (ring_slot_ && !ring_slot_->copied()) {
    return "the write into its ring slot " + std::to_string(ring_slot_->slot()) +
           " did not land within " + unused;
  }
  std::string why = d.window_count() > 0 ? "its granted window(s) saw no chunk land for " + unused
                                         : "every chunk landed but no commit came within " + unused;
  if (host_.sender_gone()) why += "; the sender had committed and closed its connection";
  return why;
}

RunStep InboundRun::CheckTimeouts(Clock::time_point now) {
  if (phase_ == RunPhase::kSigning) return {};  // retained already
  const std::string why = TimeoutWhy(now);
  if (why.empty()) return {};
  host_.Tell("delivery " + id_ + " aborted: " + why);
  // Told before the windows are revoked, so the sender reads why before a write fails.
  return Refuse(RefuseReason::kLimit, "delivery " + id_ + " aborted: " + why);
}

}  // namespace writ::receiver
