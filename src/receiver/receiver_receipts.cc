#include "receiver/receiver_receipts.h"

#include "common/hex.h"
#include "vocabulary/digest.h"

namespace writ::receiver {
namespace {

Receipt Base(const ReceiverCore& core, const DeliveryRef& ref, ReceiptRung rung,
             const char* observer) {
  Receipt r;
  r.rung = rung;
  r.delivery = ref;
  r.observer = observer;
  r.issuer = core.issuer;
  r.issued_at = NowRfc3339();
  r.context = core.context;
  if (!core.failure_domain.empty()) r.failure_domain = core.failure_domain;
  return r;
}

}  // namespace

DeliveryRef RefOf(const protocol::Announce& a) {
  DeliveryRef ref;
  ref.id = a.delivery_id;
  ref.bytes = a.bytes;
  ref.rule = std::string(writ::RuleName(a.rule));
  ref.digest = writ::ToHex(a.digest);
  ref.chunk_size = a.chunk_size;
  ref.chunks = a.bytes == 0 ? 0 : (a.bytes + a.chunk_size - 1) / a.chunk_size;
  return ref;
}

Receipt ReceivedReceipt(const ReceiverCore& core, const DeliveryRef& ref, uint64_t chunks) {
  Receipt r = Base(core, ref, ReceiptRung::kReceived, "receiver");
  r.observed_chunks = chunks;
  r.statement = "the receiver observed its own remote-write notification for each of the " +
                std::to_string(chunks) + " chunks of this delivery, in windows it granted";
  // rxm names no writer of a remote write: a notification alone could be another peer's.
  if (core.writes_attested) {
    r.statement +=
        ", and the sender attested each chunk's completed write over its own "
        "control connection (this provider names no writer of a remote write)";
  }
  r.does_not_establish =
      "how many bytes each chunk's write placed (tcp and rxm report no length for a remote "
      "write), that the bytes are correct (validation), that anyone processed them, or any "
      "retention";
  return r;
}

Receipt ValidatedReceipt(const ReceiverCore& core, const DeliveryRef& ref) {
  Receipt r = Base(core, ref, ReceiptRung::kValidated, "receiver application");
  r.rule_passed = ref.rule + " of the complete delivery";
  r.statement = "the complete delivery (" + std::to_string(ref.bytes) + " bytes) has the " +
                ref.rule + " digest " + ref.digest +
                " the sender stated for it (in its announce or its commit)";
  r.does_not_establish = "processing, or that the delivery survives any failure";
  auto rule = ParseRule(ref.rule);
  const std::string caveat = rule.ok() ? RuleCaveat(*rule) : "";
  if (!caveat.empty()) r.does_not_establish += "; nor that the sender was honest: " + caveat;
  return r;
}

Receipt ProcessedReceipt(const ReceiverCore& core, const DeliveryRef& ref,
                         const ProcessingStep& step) {
  Receipt r = Base(core, ref, ReceiptRung::kProcessed, "receiver application hook");
  r.processing_step = step.name;
  const std::string success =
      step.success_statement.empty() ? "returned success" : step.success_statement;
  r.statement =
      "the processing step '" + step.name + "' " + success + " for this validated delivery";
  r.does_not_establish = "that the delivery survives any failure";
  return r;
}

Receipt RetainedReceipt(const ReceiverCore& core, const DeliveryRef& ref,
                        const store::RetentionEvidence& ev) {
  Receipt r = Base(core, ref, ReceiptRung::kRetained, "receiver store");
  RetentionPromise p;
  p.retention = std::string(writ::RetentionName(ev.retention));
  p.acknowledged_point = ev.acknowledged_point;
  p.survives = std::string(SurvivesName(ev.retention));
  p.promise_after_failure = ev.promise_after_failure;
  p.evidence = ev.evidence;
  std::string held;
  if (ev.held_until_ms != 0) {
    // A time-to-live: the promise has an end, named in the receipt (docs/retention.md).
    held = "held for at least " + store::TtlText(ev.ttl) + " after its commit, until " +
           store::UnixMsRfc3339(ev.held_until_ms);
    p.promise_after_failure +=
        "; unless a failure it does not survive ends it first, the delivery is " + held +
        " (its time-to-live), and after that the receiver removes it";
  }
  r.retention = p;
  r.statement = "the validated delivery is retained with class " + p.retention +
                (held.empty() ? "" : ", " + held);
  r.does_not_establish = "survival of any failure beyond '" + p.survives + "'";
  return r;
}

}  // namespace writ::receiver
