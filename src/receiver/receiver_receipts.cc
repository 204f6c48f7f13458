#include "receiver/receiver_receipts.h"

#include <array>
#include <charconv>
#include <optional>
#include <string>

#include "common/hex.h"
#include "receipt/canonical_json.h"
#include "vocabulary/digest.h"

namespace writ::receiver {
namespace {

// The string an optional field holds, engaged if it was not: the one it held keeps its room
// (emplace would make a new one).
std::string& Held(std::optional<std::string>& field) { return field ? *field : field.emplace(); }

void AssignRef(DeliveryRef& ref, const protocol::Announce& a) {
  ref.id.assign(a.delivery_id);
  ref.bytes = a.bytes;
  ref.rule.assign(writ::RuleName(a.rule));
  AssignHex(ref.digest, a.digest);
  ref.chunk_size = a.chunk_size;
  ref.chunks = a.bytes == 0 ? 0 : (a.bytes + a.chunk_size - 1) / a.chunk_size;
}

// This thread's receipt for `rung`, its identity fields written for this delivery; the
// caller writes what is the rung's own.
Receipt& Base(const ReceiverCore& core, const protocol::Announce& a, ReceiptRung rung,
              const char* observer) {
  thread_local Receipt by_rung[5];
  Receipt& r = by_rung[static_cast<size_t>(rung) % 5];
  r.rung = rung;
  AssignRef(r.delivery, a);
  r.observer.assign(observer);
  r.issuer.assign(core.issuer);
  receipt::AssignNowRfc3339(r.issued_at);
  r.context = core.context;
  if (core.failure_domain.empty()) {
    r.failure_domain.reset();
  } else {
    Held(r.failure_domain).assign(core.failure_domain);
  }
  r.signature.reset();
  return r;
}

// RuleCaveat, written once per rule (it is a sentence).
const std::string& CaveatOf(Rule rule) {
  static const std::array<std::string, 256> caveats = [] {
    std::array<std::string, 256> all;
    for (size_t i = 0; i < all.size(); ++i) all[i] = RuleCaveat(static_cast<Rule>(i));
    return all;
  }();
  return caveats[static_cast<uint8_t>(rule)];
}

void AppendNumber(std::string& out, uint64_t value) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

}  // namespace

DeliveryRef RefOf(const protocol::Announce& a) {
  DeliveryRef ref;
  AssignRef(ref, a);
  return ref;
}

Receipt& ReceivedReceipt(const ReceiverCore& core, const protocol::Announce& a, uint64_t chunks) {
  Receipt& r = Base(core, a, ReceiptRung::kReceived, "receiver");
  r.observed_chunks = chunks;
  r.statement.assign("the receiver observed its own remote-write notification for each of the ");
  AppendNumber(r.statement, chunks);
  r.statement.append(" chunks of this delivery, in windows it granted");
  // rxm names no writer of a remote write: a notification alone could be another peer's.
  if (core.writes_attested) {
    r.statement.append(
        ", and the sender attested each chunk's completed write over its own "
        "control connection (this provider names no writer of a remote write)");
  }
  r.does_not_establish.assign(
      "how many bytes each chunk's write placed (tcp and rxm report no length for a remote "
      "write), that the bytes are correct (validation), that anyone processed them, or any "
      "retention");
  return r;
}

Receipt& ValidatedReceipt(const ReceiverCore& core, const protocol::Announce& a) {
  Receipt& r = Base(core, a, ReceiptRung::kValidated, "receiver application");
  const DeliveryRef& ref = r.delivery;
  Held(r.rule_passed).assign(ref.rule).append(" of the complete delivery");
  r.statement.assign("the complete delivery (");
  AppendNumber(r.statement, ref.bytes);
  r.statement.append(" bytes) has the ")
      .append(ref.rule)
      .append(" digest ")
      .append(ref.digest)
      .append(" the sender stated for it (in its announce or its commit)");
  r.does_not_establish.assign("processing, or that the delivery survives any failure");
  const std::string& caveat = CaveatOf(a.rule);
  if (!caveat.empty()) {
    r.does_not_establish.append("; nor that the sender was honest: ").append(caveat);
  }
  return r;
}

Receipt& ProcessedReceipt(const ReceiverCore& core, const protocol::Announce& a,
                          const ProcessingStep& step) {
  Receipt& r = Base(core, a, ReceiptRung::kProcessed, "receiver application hook");
  Held(r.processing_step).assign(step.name);
  r.statement.assign("the processing step '")
      .append(step.name)
      .append("' ")
      .append(step.success_statement.empty() ? "returned success" : step.success_statement)
      .append(" for this validated delivery");
  r.does_not_establish.assign("that the delivery survives any failure");
  return r;
}

Receipt& RetainedReceipt(const ReceiverCore& core, const protocol::Announce& a,
                         const store::RetentionEvidence& ev) {
  Receipt& r = Base(core, a, ReceiptRung::kRetained, "receiver store");
  RetentionPromise& p = r.retention ? *r.retention : r.retention.emplace();
  p.retention.assign(writ::RetentionName(ev.retention));
  p.acknowledged_point.assign(ev.acknowledged_point);
  p.survives.assign(SurvivesName(ev.retention));
  p.promise_after_failure.assign(ev.promise_after_failure);
  p.evidence.assign(ev.evidence);
  r.statement.assign("the validated delivery is retained with class ").append(p.retention);
  if (ev.held_until_ms != 0) {
    // A time-to-live: the promise has an end, named in the receipt (docs/retention.md).
    const std::string held = "held for at least " + store::TtlText(ev.ttl) +
                             " after its commit, until " + store::UnixMsRfc3339(ev.held_until_ms);
    p.promise_after_failure.append(
        "; unless a failure it does not survive ends it first, the delivery is " + held +
        " (its time-to-live), and after that the receiver removes it");
    r.statement.append(", ").append(held);
  }
  r.does_not_establish.assign("survival of any failure beyond '").append(p.survives).append("'");
  return r;
}

}  // namespace writ::receiver
