// How an inbound run finishes once every byte is in and digested: validated against the
// digest it must match, processed when asked, published to the out directory, committed to
// the store with its receipts, and ended retained; or refused at the first step that fails.
#include <span>

#include "receiver/inbound_run.h"
#include "receiver/out_dir.h"
#include "receiver/out_files.h"
#include "receiver/receiver_receipts.h"
#include "store/lifecycle.h"

namespace writ::receiver {

using admission::ReasonFor;
using protocol::RefuseReason;

RunStep InboundRun::Finish() {
  InboundDelivery& d = *delivery_;
  const protocol::Announce& a = d.announce();
  if (d.FinishDigest() != d.expected_digest()) {
    // Nothing computed over the received bytes goes back to the peer: a digest of what a
    // window held would let a sender that never wrote read it out, a probe at a time.
    return Refuse(RefuseReason::kValidation,
                  "validation failed: the " + std::to_string(a.bytes) + " bytes received for " +
                      id_ + " do not match the " +
                      (d.digest_from_commit() ? "committed " : "announced ") +
                      std::string(writ::RuleName(a.rule)) + " digest");
  }
  phase_ = RunPhase::kValidated;
  IssueRung(InTarget(ValidatedReceipt(core_, a)));
  if (exposed_ != nullptr) exposed_->MarkValidated();
  if (held_ == Held::kUpgrade) {
    RunStep checked = CheckUpgradeContent();
    if (checked.ended || !checked.status.ok()) return checked;
  }
  if (a.until == Rung::kProcessed && core_.options.processing) {
    if (Status flushed = host_.FlushReceipts(); !flushed.ok()) return {flushed};  // not waiting
    RunStep processed = Process();
    if (processed.ended || !processed.status.ok()) return processed;
  }
  if (exposed_ == nullptr) {
    if (Status out = PublishOut(); !out.ok()) return RefuseOut(out);
  }
  if (held_ == Held::kRedelivery) return AnswerFromStore();
  return Commit();
}

// The processing step, for a delivery that asks for `processed`: its receipt, or the run
// refused naming why the step failed.
RunStep InboundRun::Process() {
  phase_ = RunPhase::kProcessing;
  host_.NeedFabricThread();  // a step may take seconds
  const ProcessingStep& step = *core_.options.processing;
  const protocol::Announce& a = delivery_->announce();
  const DeliveryRef ref = RefOf(a);
  store::PayloadWriter& writer = delivery_->writer();
  DeliveryView view{
      id_,
      a.bytes,
      ref.digest,
      [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); },
      [this] { return core_.shutdown.aborting(); },
      ref.rule};
  Status ran = step.run(view);
  if (ran.ok()) {
    IssueRung(ProcessedReceipt(core_, a, step));
    return {};
  }
  if (core_.shutdown.aborting()) return AbortForShutdown();
  host_.Tell("delivery " + id_ + " refused: processing step '" + step.name +
             "' failed: " + ran.message());
  return Refuse(RefuseReason::kProcessing,
                "processing step '" + step.name + "' failed: " + ran.message());
}

// An upgrade announced without a digest: the committed one must be the held copy's, or the
// id names other content.
RunStep InboundRun::CheckUpgradeContent() {
  auto held = core_.store->Lookup(id_);
  if (!held.ok() || !held->has_value() || (*held)->meta.digest == delivery_->announce().digest) {
    return {};
  }
  return Refuse(RefuseReason::kConflictingId,
                "delivery " + id_ + " is already retained with other content");
}

RunStep InboundRun::Commit() {
  phase_ = RunPhase::kCommitting;
  const protocol::Announce& a = delivery_->announce();
  // Nor does `validated` wait for a commit that syncs to the device.
  if (a.retention == RetentionClass::kPowerLoss) {
    if (Status flushed = host_.FlushReceipts(); !flushed.ok()) return {flushed};
  }
  // A durable commit records the receipts issued so far in its index row: signed first.
  // A volatile one is in memory: they are signed with `retained`, at the end of the pass,
  // with every other rung and `retained` of the connection's pass (one signature for all).
  const bool in_memory = a.retention == RetentionClass::kVolatile;
  if (!in_memory) {
    host_.NeedFabricThread();  // a sync to the device, or a round to the replicas
    if (Status signed_now = host_.SignIssued().status(); !signed_now.ok()) return {signed_now};
  }
  recorded_at_commit_ = receipts_.size();
  const auto commit_began = Clock::now();
  auto evidence = delivery_->writer().Commit(receipts_);
  if (!evidence.ok()) {
    return Refuse(ReasonFor(evidence.status()), "retention failed: " + evidence.status().message());
  }
  core_.metrics.StoreCommitted(a.retention, SecondsSince(commit_began));
  const Receipt& retained = RetainedReceipt(core_, a, *evidence);
  if (in_memory) {
    to_sign_ = receipt::Unsigned(retained);
    phase_ = RunPhase::kSigning;
    return {};
  }
  Result<std::string> json = host_.SignIssued(&retained);
  if (!json.ok()) return {json.status()};
  return OnRetainedSigned(std::move(*json));
}

std::optional<receipt::UnsignedReceipt> InboundRun::TakeReceiptToSign() {
  std::optional<receipt::UnsignedReceipt> taken;
  if (phase_ == RunPhase::kSigning) taken.swap(to_sign_);
  return taken;
}

RunStep InboundRun::OnRetainedSigned(std::string json) {
  receipts_.push_back(std::move(json));
  if (exposed_ == nullptr) {
    // The application's buffer holds an addressed delivery's bytes: writ's store and out
    // directory hold nothing. Otherwise the retained receipt is recorded with the delivery
    // (after those signed with it) before it is sent; if that fails the class was not
    // reached (the store has undone the commit), and the sender is told so.
    if (Status out = PublishReceiptsOut(receipts_); !out.ok()) return RefuseOut(out);
    const auto after_commit = std::span<const std::string>(receipts_).subspan(recorded_at_commit_);
    if (Status recorded = core_.store->AppendReceipts(id_, after_commit); !recorded.ok()) {
      return Refuse(ReasonFor(recorded), "retention failed: " + recorded.message());
    }
  }
  // Moved on, not copied: the run ends here and needs its receipts no more.
  std::vector<std::string> sent;
  sent.push_back(std::move(receipts_.back()));
  receipts_.pop_back();
  return EndWith(RunEnding::Retained(std::move(sent), /*earns_ring=*/true));
}

// A re-delivery validated: the store retains these very bytes (same id, size, rule and
// digest) already, so its retention receipts are the answer; nothing is stored twice.
RunStep InboundRun::AnswerFromStore() {
  const std::vector<uint8_t>& digest = delivery_->announce().digest;
  auto held = core_.store->LookupVerified(id_);
  if (held.ok() && held->has_value() && (*held)->meta.digest != digest) {
    // Only possible without an announced digest: the committed one names other content.
    return Refuse(RefuseReason::kConflictingId,
                  "delivery " + id_ + " is already retained with other content");
  }
  if (!held.ok() || !held->has_value()) {
    return Refuse(RefuseReason::kRetention,
                  "delivery " + id_ +
                      " was validated but is no longer retained here (removed meanwhile); "
                      "send it again");
  }
  if (Status out = PublishReceiptsOut((*held)->receipts); !out.ok()) return RefuseOut(out);
  std::vector<std::string> retained;
  for (const auto& json : (*held)->receipts) {
    auto receipt = ReceiptFromJson(json);
    if (receipt.ok() && receipt->rung == ReceiptRung::kRetained) retained.push_back(json);
  }
  return EndWith(RunEnding::Retained(std::move(retained), /*earns_ring=*/false));
}

// ReceiverOptions::out_dir: the validated bytes as a file (out_dir.h); Ok without one.
Status InboundRun::PublishOut() {
  if (core_.options.out_dir.empty()) return Status::Ok();
  host_.NeedFabricThread();  // files written, and synced for power-loss
  const protocol::Announce& a = delivery_->announce();
  store::PayloadWriter& writer = delivery_->writer();
  auto publish = [&] {
    return PublishOutPayload(
        core_.options.out_dir, id_, a.bytes, a.retention == RetentionClass::kPowerLoss,
        [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); });
  };
  Status published = publish();
  // Other content under the id, and the store retains nothing under it (not a re-send, not
  // an upgrade): the file outlived its delivery and must not block the id.
  if (published.code() != ErrorCode::kRefused || held_ != Held::kNo) return published;
  WRIT_ASSIGN_OR_RETURN(const std::string moved,
                        SetAsideStaleOutFiles(core_.options.out_dir, id_, store::NowUnixMs()));
  if (!moved.empty()) host_.Tell(moved);
  return publish();
}

Status InboundRun::PublishReceiptsOut(const std::vector<std::string>& receipts) {
  if (core_.options.out_dir.empty()) return Status::Ok();
  return PublishOutReceipts(core_.options.out_dir, id_, receipts,
                            announced_.retention == RetentionClass::kPowerLoss);
}

RunStep InboundRun::AbortForShutdown() {
  const std::string why = "delivery " + id_ + " aborted: the receiver is shutting down and its " +
                          std::to_string(core_.shutdown.drain_ms()) +
                          " ms drain deadline passed first; nothing of it was retained";
  host_.Tell(why);
  core_.shutdown.NoteAborted(id_);
  // Told before the windows are revoked, so the sender reads why before a write fails; its
  // uncommitted bytes are discarded, nothing is retained.
  return Refuse(RefuseReason::kShuttingDown, why);
}

// No receipt claims more than happened: an output that failed refuses the delivery.
RunStep InboundRun::RefuseOut(const Status& failed) {
  const bool conflict = failed.code() == ErrorCode::kRefused;
  return Refuse(conflict ? RefuseReason::kConflictingId : RefuseReason::kRetention,
                "output failed: " + failed.message());
}

}  // namespace writ::receiver
