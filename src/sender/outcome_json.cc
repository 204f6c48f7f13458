// The two documents a finished send is written as: cli.md's `--json` output and
// a writ.evidence/1 bundle whose every claim its own evidence supports.
#include <nlohmann/json.hpp>

#include "protocol/messages.h"
#include "writ/audit.h"
#include "writ/sender.h"

namespace writ {
namespace {

using json = nlohmann::json;

json ContextJson(const ReceiptContext& c) {
  return json{{"operation", c.operation},
              {"transport", c.transport},
              {"provider", c.provider},
              {"device", c.device},
              {"memory_type", c.memory_type},
              {"software_release", c.software_release},
              {"completion_level", c.completion_level},
              {"notes", c.notes}};
}

json WorkCompletionJson(const WorkCompletionRecord& wc) {
  json j{{"wr_id", std::to_string(wc.request_id)},
         {"status", wc.status},
         {"endpoint", wc.endpoint},
         {"attempt", wc.attempt}};
  if (wc.chunk != UINT64_MAX) j["chunk"] = wc.chunk;
  if (!wc.ok) {
    j["provider_errno"] = wc.provider_errno.value_or(0);
    j["provider_error"] = wc.provider_error;
  }
  return j;
}

const Receipt* Find(const DeliveryOutcome& o, ReceiptRung rung) {
  for (const auto& r : o.receipts) {
    if (r.rung == rung) return &r;
  }
  return nullptr;
}

// ---- writ's own evidence bundle, built as the typed bundle writ audit reads ----

template <typename T>
std::optional<T> Stated(const std::string& text, std::optional<T> (*parse)(std::string_view)) {
  return text.empty() ? std::nullopt : parse(text);
}

audit::Context EvidenceContext(const ReceiptContext& c) {
  audit::Context out;
  out.operation = Stated(c.operation, audit::ParseOperation);
  out.transport = Stated(c.transport, audit::ParseTransport);
  if (!c.device.empty()) out.device = c.device;
  out.memory_type = Stated(c.memory_type, audit::ParseMemoryType);
  if (!c.software_release.empty()) out.software_release = c.software_release;
  // "default" promises nothing nameable: stated as not stated.
  out.completion_level = Stated(c.completion_level, audit::ParseCompletionLevel);
  return out;
}

audit::Delivery EvidenceDelivery(const DeliveryOutcome& o) {
  audit::Delivery d;
  d.id = o.delivery.id;
  d.bytes = o.delivery.bytes;
  // Portions are the writes this send made; none when the receiver already held the bytes
  // or none was posted.
  const bool wrote = o.bytes_moved || !o.work_completions.empty();
  for (uint64_t c = 0; wrote && c < o.delivery.chunks; ++c) {
    const uint64_t offset = c * o.delivery.chunk_size;
    d.portions.push_back(
        audit::Portion{std::to_string(o.portion_request_ids[c]), offset,
                       std::min(o.delivery.chunk_size, o.delivery.bytes - offset)});
  }
  return d;
}

audit::WorkCompletion EvidenceRecord(const WorkCompletionRecord& wc) {
  audit::WorkCompletion r;
  r.wr_id = std::to_string(wc.request_id);
  r.status = wc.status;
  r.qp_num = wc.endpoint;
  r.vendor_err = wc.ok ? 0 : wc.provider_errno.value_or(0);
  if (wc.ok) r.success_detail = audit::WorkCompletion::SuccessDetail{"rdma_write", std::nullopt};
  return r;
}

// Where the receiver's store holds a delivery at the acknowledged point (rule 13):
// volatile retention is process memory, the others files in its data directory.
audit::Medium MediumOf(const RetentionPromise& p) {
  return p.retention == "volatile" ? audit::Medium::kDram : audit::Medium::kDisk;
}

audit::Acknowledgement EvidenceAck(const DeliveryOutcome& o, const Receipt& r,
                                   audit::AckResult result, const std::string& rule) {
  audit::Acknowledgement a;
  a.label = std::string(result == audit::AckResult::kProcessed ? "processed" : "validated") +
            " receipt from " + r.issuer;
  a.delivery = o.delivery.id;
  a.bytes = o.delivery.bytes;
  a.result = result;
  a.rule = rule;
  return a;
}

void AddReceiverEvidence(const DeliveryOutcome& o, audit::EvidenceBundle& bundle) {
  const std::string& id = o.delivery.id;
  const Receipt* received = Find(o, ReceiptRung::kReceived);
  const Receipt* validated = Find(o, ReceiptRung::kValidated);
  const Receipt* processed = Find(o, ReceiptRung::kProcessed);
  const Receipt* retained = Find(o, ReceiptRung::kRetained);
  if (received) {
    // The receiver saw its own notification for every chunk: placement is observed there.
    bundle.placement.push_back({id, audit::PlacementBasis::kObserved});
    for (const audit::Portion& p : bundle.deliveries[0].portions)
      bundle.notifications.push_back({id, "write_with_imm", std::nullopt, p.wr_id});
  }
  const std::string rule =
      (validated && validated->rule_passed) ? *validated->rule_passed : o.delivery.rule;
  if (validated)
    bundle.acknowledgements.push_back(
        EvidenceAck(o, *validated, audit::AckResult::kValidated, rule));
  if (processed)
    bundle.acknowledgements.push_back(
        EvidenceAck(o, *processed, audit::AckResult::kProcessed, rule));
  if (retained && retained->retention) {
    const RetentionPromise& p = *retained->retention;
    bundle.retention_promises.push_back({id, p.acknowledged_point,
                                         audit::Survives::Parse(p.survives),
                                         p.promise_after_failure, p.evidence, MediumOf(p)});
  }
}

void AddClaims(const DeliveryOutcome& o, audit::EvidenceBundle& bundle) {
  const std::string& id = o.delivery.id;
  auto claim = [&](std::string kind, std::optional<uint64_t> count, bool about_delivery,
                   std::string text) {
    audit::Claim c;
    c.id = "c" + std::to_string(bundle.claims.size() + 1);
    c.kind_name = std::move(kind);
    c.count = count;
    if (about_delivery) c.delivery = id;
    c.text = std::move(text);
    bundle.claims.push_back(std::move(c));
  };
  uint64_t successes = 0;
  for (const auto& wc : o.work_completions) successes += wc.ok ? 1 : 0;
  claim("work_requests_succeeded", successes, false,
        std::to_string(successes) + " write work requests completed with success");
  if (o.bytes_moved && o.status.code() != ErrorCode::kTransport &&
      Find(o, ReceiptRung::kTransport) != nullptr)
    claim("deliveries_transferred", 1, false, "1 logical delivery transferred");
  if (Find(o, ReceiptRung::kReceived)) {
    claim("placed", std::nullopt, true, "every chunk was placed in the receiver's window");
    claim("notified", std::nullopt, true, "the receiver was notified of every chunk");
  }
  if (Find(o, ReceiptRung::kValidated))
    claim("validated", std::nullopt, true, "the complete delivery passed its rule");
  if (Find(o, ReceiptRung::kProcessed))
    claim("processed", std::nullopt, true, "the processing step succeeded");
  const Receipt* retained = Find(o, ReceiptRung::kRetained);
  if (retained && retained->retention && retained->retention->survives != "process-running") {
    const std::string& survives = retained->retention->survives;
    claim("durable", std::nullopt, true, "the delivery survives " + survives);
    bundle.claims.back().survives = audit::Survives::Parse(survives);
  }
}

// The --json document but its receipts.
json OutcomeWithoutReceipts(const DeliveryOutcome& o, const DeliveryOptions& options) {
  json wcs = json::array();
  for (const auto& wc : o.work_completions) wcs.push_back(WorkCompletionJson(wc));
  json reached{
      {"rung", o.reached_rung ? json(std::string(ReceiptRungName(*o.reached_rung))) : json()},
      {"retention", o.reached_retention
                        ? json(std::string(writ::RetentionName(*o.reached_retention)))
                        : json()}};
  json out{
      {"delivery",
       {{"id", o.delivery.id},
        {"bytes", o.delivery.bytes},
        {"chunks", o.delivery.chunks},
        {"chunk_size", o.delivery.chunk_size},
        {"rule", o.delivery.rule},
        {"digest", o.delivery.digest}}},
      {"context", ContextJson(o.context)},
      {"work_completions", wcs},
      {"reached", reached},
      {"requested",
       {{"rung", std::string(writ::RungName(options.until))},
        {"retention",
         std::string(writ::RetentionName(options.retention.value_or(RetentionClass::kVolatile)))}}},
      {"bytes_moved", o.bytes_moved},
      {"ring", o.ring}};
  if (!o.source_path.empty()) {
    out["source"] = {{"path", o.source_path}, {"note", o.source_note}};
  }
  if (!o.status.ok()) {
    out["error"] = {{"kind", std::string(ErrorCodeName(o.status.code()))},
                    {"message", o.status.message()}};
  }
  return out;
}

}  // namespace

std::string OutcomeToJson(const DeliveryOutcome& o, const SendOptions& options) {
  return OutcomeToJson(o, DeliveryOptionsOf(options));
}

std::string OutcomeToJson(const DeliveryOutcome& o, const DeliveryOptions& options) {
  json out = OutcomeWithoutReceipts(o, options);
  json receipts = json::array();
  for (size_t i = 0; i < o.receipts.size(); ++i)
    receipts.push_back(json::parse(o.receipts.Text(i)));
  out["receipts"] = std::move(receipts);
  return out.dump(2);
}

std::string OutcomeToCompactJson(const DeliveryOutcome& o, const DeliveryOptions& options) {
  std::string text = OutcomeWithoutReceipts(o, options).dump();
  text.pop_back();  // the closing brace: the receipts join as the last member
  text += ",\"receipts\":[";
  for (size_t i = 0; i < o.receipts.size(); ++i) {
    if (i > 0) text += ',';
    o.receipts.AppendText(i, text);  // as received: no receipt is read or rebuilt here
  }
  text += "]}";
  return text;
}

std::string OutcomeToEvidenceBundle(const DeliveryOutcome& o) {
  audit::EvidenceBundle bundle;
  bundle.context = EvidenceContext(o.context);
  bundle.deliveries.push_back(EvidenceDelivery(o));
  for (const auto& wc : o.work_completions) bundle.work_completions.push_back(EvidenceRecord(wc));
  AddReceiverEvidence(o, bundle);
  AddClaims(o, bundle);
  // Revision 3 (docs/audit.md): the receipts the claims are drawn from, as they were signed;
  // the typed bundle has no place for them, so they join its document here.
  auto doc = nlohmann::ordered_json::parse(audit::BundleToJson(bundle));
  doc["receipts"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < o.receipts.size(); ++i)
    doc["receipts"].push_back(nlohmann::ordered_json::parse(o.receipts.Text(i)));
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace writ
