#include "outcome_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/printable.h"
#include "writ/vocabulary.h"

namespace writ::cli {

std::string WithThousands(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string OutcomeToText(const DeliveryOutcome& o, bool verbose) {
  std::string out;
  const DeliveryRef& d = o.delivery;
  out += fmt::format("delivery {}: {} bytes in {} chunk(s) of {} bytes, {} {}\n", Printable(d.id),
                     WithThousands(d.bytes), d.chunks, WithThousands(d.chunk_size),
                     Printable(d.rule), Printable(d.digest));
  const ReceiptContext& c = o.context;
  if (!c.provider.empty()) {
    out += fmt::format(
        "context: {} over {} (provider {}, device {}), {} memory, completion level {}\n",
        Printable(c.operation), Printable(c.transport), Printable(c.provider), Printable(c.device),
        Printable(c.memory_type), Printable(c.completion_level));
    out += fmt::format("         {}\n", Printable(c.software_release));
    for (const auto& note : c.notes) out += fmt::format("  note: {}\n", Printable(note));
  }
  uint64_t ok = 0, failed = 0;
  for (const auto& wc : o.work_completions) (wc.ok ? ok : failed)++;
  out += fmt::format("work completions: {} record(s): {} success, {} error\n",
                     o.work_completions.size(), ok, failed);
  for (const auto& wc : o.work_completions) {
    if (wc.ok && !verbose) continue;  // error records are always shown
    if (wc.ok) {
      out += fmt::format("  request {:>4}  chunk {:>4}  success\n", wc.request_id, wc.chunk);
    } else {
      out += fmt::format("  request {:>4}  chunk {:>4}  {} (provider error {}: {})\n",
                         wc.request_id, wc.chunk, Printable(wc.status),
                         wc.provider_errno.value_or(0), Printable(wc.provider_error));
    }
  }
  if (!o.bytes_moved && o.status.ok())
    out += "no bytes moved: the receiver already held this content\n";
  out += fmt::format("receipts ({}):\n", o.receipts.size());
  for (const auto& r : o.receipts) {
    out += fmt::format("  {:<9}  by {} at {}\n", ReceiptRungName(r.rung), Printable(r.issuer),
                       Printable(r.issued_at));
    out += fmt::format("             {}\n", Printable(r.statement));
    if (r.retention) {
      out += fmt::format("             acknowledged point: {}\n",
                         Printable(r.retention->acknowledged_point));
      out += fmt::format("             survives: {}; after that failure: {}\n",
                         Printable(r.retention->survives),
                         Printable(r.retention->promise_after_failure));
    }
    out += fmt::format("             does not establish: {}\n", Printable(r.does_not_establish));
  }
  out += fmt::format(
      "reached: {}, retention {}\n",
      o.reached_rung ? std::string(ReceiptRungName(*o.reached_rung)) : std::string("none"),
      o.reached_retention ? std::string(writ::RetentionName(*o.reached_retention))
                          : std::string("none"));
  return out;
}

std::string UnsignedResendNote(const DeliveryOutcome& outcome, bool signed_send) {
  if (signed_send || !outcome.bytes_moved) return "";
  std::string retained_at, validated_at;
  for (const Receipt& r : outcome.receipts) {
    if (r.rung == ReceiptRung::kRetained) retained_at = r.issued_at;
    if (r.rung == ReceiptRung::kValidated) validated_at = std::max(validated_at, r.issued_at);
  }
  // RFC 3339 UTC with milliseconds: the strings order as the times do.
  if (retained_at.empty() || validated_at.empty() || !(retained_at < validated_at)) return "";
  return "writ: " + outcome.delivery.id + " was already retained (since " + retained_at +
         "); its bytes moved again because this send is unsigned: with --identity DIR a "
         "re-send of the same content is answered from the store\n";
}

}  // namespace writ::cli
