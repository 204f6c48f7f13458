// ReportToText: the report explained to a person, with the questions to ask.
#include <string>

#include "audit/sentences.h"
#include "writ/audit.h"

namespace writ::audit {
namespace {

using internal::Counted;
using internal::Grouped;
using internal::Quoted;

// Supplier strings reach a terminal: control and bidi-override characters are
// shown escaped so that a bundle cannot rewrite what the reader sees.
std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      continue;
    }
    // U+202A..U+202E, U+2066..U+2069 (bidi controls), U+2028/U+2029 (separators): E2 80/81 xx.
    if (c == 0xe2 && i + 2 < text.size()) {
      const auto b1 = static_cast<unsigned char>(text[i + 1]);
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      const bool bidi =
          (b1 == 0x80 && b2 >= 0xa8 && b2 <= 0xae) || (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9);
      if (bidi) {
        const unsigned code = 0x2000 + ((b1 & 0x3f) << 6) + (b2 & 0x3f);
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 0xf];
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

std::string Padded(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string Readable(std::string_view wire) {
  std::string out(wire);
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

void ExplainDelivery(const DeliveryReport& d, std::string& out) {
  out += "Delivery " + Printable(Quoted(d.id)) + ": " + Counted(d.bytes, "byte", "bytes") + " in " +
         Counted(d.portions, "portion", "portions") + "\n";
  const std::pair<std::string_view, std::string> facts[] = {
      {"transport", Readable(ToString(d.transport))},
      {"placement", Readable(ToString(d.placement))},
      {"notification", Readable(ToString(d.notification))},
      {"validation", Readable(ToString(d.validation))},
      {"processing", Readable(ToString(d.processing))},
      {"retention", Readable(d.retention.ToString())},
  };
  for (const auto& [name, value] : facts) out += "  " + Padded(name, 14) + value + "\n";
  for (const std::string& reason : d.reasons) out += "  - " + Printable(reason) + "\n";
  out += "\n";
}

// One line for the deliveries not explained one by one.
void SumUp(const std::vector<DeliveryReport>& rest, std::string& out) {
  uint64_t transferred = 0, placed = 0, validated = 0, processed = 0, retained = 0;
  for (const DeliveryReport& d : rest) {
    transferred += d.transport == TransportState::kEstablished;
    placed += d.placement != PlacementState::kNotEstablished;
    validated += d.validation == ValidationState::kEstablished;
    processed += d.processing == ProcessingState::kEstablished;
    retained += d.retention.kind == RetentionState::Kind::kPromised;
  }
  out += "... and " + Counted(rest.size(), "more delivery", "more deliveries") + ": " +
         Grouped(transferred) + " with transport established, " + Grouped(placed) + " placed, " +
         Grouped(validated) + " validated, " + Grouped(processed) + " processed, " +
         Grouped(retained) + " with a complete retention promise (--json lists each).\n\n";
}

// Revision 3's first line: whether anything in the bundle is signed, and by whom.
std::string SignatureLine(const SignatureReport& sig) {
  if (sig.verified == 0) {
    return "No signatures: nothing in this bundle is signed (" +
           (sig.receipts.empty()
                ? std::string("it embeds no receipts")
                : Counted(sig.receipts.size(), "embedded receipt", "embedded receipts") +
                      ", none verified about its deliveries") +
           "); every claim is stated, not signed.\n";
  }
  std::string keys;
  for (const std::string& k : sig.keys) keys += (keys.empty() ? "" : ", ") + Printable(k);
  return "Signed: " + Grouped(sig.verified) + " of " +
         Counted(sig.receipts.size(), "embedded receipt", "embedded receipts") +
         " verified about its deliveries, by key " + keys +
         (sig.pinned ? " (pinned)" : " (the keys they name; --key or --trust pins the signers)") +
         ".\n";
}

// Each embedded receipt that supports nothing, and why.
void ExplainReceipts(const SignatureReport& sig, std::string& out) {
  std::string lines;
  for (const SignatureReport::Entry& e : sig.receipts) {
    const std::string what = Printable(e.check.where) + " (" + Printable(e.check.rung) + ", " +
                             Printable(Quoted(e.check.delivery)) + "): ";
    if (e.check.state == ReceiptCheck::State::kInvalid)
      lines += "  " + what + "does not verify: " + Printable(e.check.problem) + "\n";
    else if (e.check.state == ReceiptCheck::State::kNotSigned)
      lines += "  " + what + "not signed\n";
    else if (e.check.state == ReceiptCheck::State::kUnpinned)
      lines += "  " + what + Printable(e.check.problem) + "\n";
    else if (!e.attributed)
      lines += "  " + what + "signed by key " + Printable(e.check.key_id) +
               ", but names no delivery of this bundle\n";
  }
  if (!lines.empty()) out += "Embedded receipts that support nothing\n" + lines + "\n";
}

}  // namespace

std::string_view MissingContextQuestion(std::string_view field) {
  if (field == "operation")
    return "Which operation moved the data: RDMA Write, Write-with-immediate, or a send?";
  if (field == "transport")
    return "Which transport and provider carried the data (e.g. InfiniBand RC, RoCE RC, iWARP, "
           "tcp)?";
  if (field == "device") return "Which device (NIC or fabric domain) carried the data?";
  if (field == "memory_type")
    return "What kind of memory did the data land in: host DRAM, persistent memory, GPU memory or "
           "a file?";
  if (field == "software_release")
    return "Which software release (driver, provider, firmware) produced these records?";
  if (field == "completion_level")
    return "Which completion level does this success record guarantee?";
  return "What is this field's value?";
}

std::string ReportToText(const AuditReport& report, const TextOptions& options) {
  std::string out;
  if (report.signatures) out += SignatureLine(*report.signatures);
  out += "writ audit: " + Counted(report.records, "completion record", "completion records") +
         " (" + Grouped(report.successful) + " successful, " + Grouped(report.failed) +
         " failed), " +
         Counted(report.logical_deliveries, "logical delivery", "logical deliveries") + ", " +
         Grouped(report.placed_bytes) + " bytes placed (stipulated or observed).\n\n";

  const std::size_t shown = options.max_deliveries == 0
                                ? report.deliveries.size()
                                : std::min(options.max_deliveries, report.deliveries.size());
  for (std::size_t i = 0; i < shown; ++i) ExplainDelivery(report.deliveries[i], out);
  if (shown < report.deliveries.size())
    SumUp({report.deliveries.begin() + static_cast<std::ptrdiff_t>(shown), report.deliveries.end()},
          out);

  if (!report.claims.empty()) {
    out += "Claims\n";
    for (const ClaimVerdict& c : report.claims) {
      const bool supported = c.verdict == Verdict::kSupported;
      const std::string what = c.text ? Quoted(*c.text) : "(" + c.kind + ")";
      out += "  " + Printable(c.id) + " " + Printable(what) + ": " +
             (supported ? "supported" : "NOT SUPPORTED") + "\n";
      out += "      " + Printable(c.reason) + "\n";
      if (report.signatures && supported) {
        std::string keys;
        for (const std::string& k : c.signed_by) keys += (keys.empty() ? "" : ", ") + Printable(k);
        out += keys.empty() ? "      stated, not signed\n" : "      signed by key " + keys + "\n";
      }
    }
    out += "\n";
  }
  if (report.signatures) ExplainReceipts(*report.signatures, out);

  if (!report.unattributed.empty()) {
    out += "Entries naming no delivery of this bundle\n";
    for (const UnattributedEntry& e : report.unattributed)
      out += "  " + std::string(ToString(e.kind)) + " " + Grouped(e.index) + ": " +
             Printable(Quoted(e.delivery)) + "\n";
    out += "\n";
  }

  // Rule 16: the same questions, in the same order, as the JSON report's `questions`.
  if (!report.questions.empty()) {
    out += "Ask next\n";
    for (const std::string& question : report.questions) out += "  - " + Printable(question) + "\n";
    out += "\n";
  }

  if (!report.missing_context.empty()) {
    out += "Context not stated\n";
    for (const std::string& field : report.missing_context)
      out += "  " + Padded(field, 18) + std::string(MissingContextQuestion(field)) + "\n";
  } else {
    out += "Context: every field stated.\n";
  }
  return out;
}

}  // namespace writ::audit
