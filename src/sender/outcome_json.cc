// The two documents a finished send is written as: cli.md's `--json` output and
// a writ.evidence/1 bundle whose every claim its own evidence supports.
#include <nlohmann/json.hpp>

#include "protocol/messages.h"
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

}  // namespace

std::string OutcomeToJson(const DeliveryOutcome& o, const SendOptions& options) {
  return OutcomeToJson(o, DeliveryOptionsOf(options));
}

std::string OutcomeToJson(const DeliveryOutcome& o, const DeliveryOptions& options) {
  json receipts = json::array();
  for (const auto& r : o.receipts) receipts.push_back(json::parse(ReceiptToJson(r)));
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
      {"receipts", receipts},
      {"reached", reached},
      {"requested",
       {{"rung", std::string(writ::RungName(options.until))},
        {"retention",
         std::string(writ::RetentionName(options.retention.value_or(RetentionClass::kVolatile)))}}},
      {"bytes_moved", o.bytes_moved}};
  if (!o.source_path.empty()) {
    out["source"] = {{"path", o.source_path}, {"note", o.source_note}};
  }
  if (!o.status.ok()) {
    out["error"] = {{"kind", std::string(ErrorCodeName(o.status.code()))},
                    {"message", o.status.message()}};
  }
  return out.dump(2);
}

std::string OutcomeToEvidenceBundle(const DeliveryOutcome& o) {
  const std::string& id = o.delivery.id;
  json portions = json::array();
  // Portions are the writes this send made; none when the receiver already held the bytes.
  for (uint64_t c = 0; o.bytes_moved && c < o.delivery.chunks; ++c) {
    const uint64_t offset = c * o.delivery.chunk_size;
    portions.push_back({{"wr_id", std::to_string(o.portion_request_ids[c])},
                        {"offset", offset},
                        {"bytes", std::min(o.delivery.chunk_size, o.delivery.bytes - offset)}});
  }
  json wcs = json::array();
  uint64_t successes = 0;
  for (const auto& wc : o.work_completions) {
    json j{
        {"wr_id", std::to_string(wc.request_id)}, {"status", wc.status}, {"qp_num", wc.endpoint}};
    if (wc.ok) {
      ++successes;
      j["opcode"] = "rdma_write";
      j["byte_len"] = nullptr;
      j["vendor_err"] = 0;
    } else {
      j["vendor_err"] = wc.provider_errno.value_or(0);
    }
    wcs.push_back(std::move(j));
  }
  const Receipt* received = Find(o, ReceiptRung::kReceived);
  const Receipt* validated = Find(o, ReceiptRung::kValidated);
  const Receipt* processed = Find(o, ReceiptRung::kProcessed);
  const Receipt* retained = Find(o, ReceiptRung::kRetained);
  const bool all_transported = o.bytes_moved && o.status.code() != ErrorCode::kTransport &&
                               Find(o, ReceiptRung::kTransport) != nullptr;

  json placement = json::array(), notifications = json::array(), acks = json::array(),
       promises = json::array(), claims = json::array();
  if (received) {
    // The receiver saw its own notification for every chunk: placement is observed there.
    placement.push_back({{"delivery", id}, {"basis", "observed"}});
    notifications.push_back({{"delivery", id},
                             {"kind", "write_with_imm"},
                             {"imm", nullptr},
                             {"chunks", received->observed_chunks.value_or(0)},
                             {"observer", received->issuer}});
  }
  if (validated) {
    acks.push_back({{"label", "validated receipt from " + validated->issuer},
                    {"delivery", id},
                    {"bytes", o.delivery.bytes},
                    {"result", "validated"},
                    {"rule", validated->rule_passed.value_or(o.delivery.rule)}});
  }
  if (processed) {
    acks.push_back({{"label", "processed receipt from " + processed->issuer},
                    {"delivery", id},
                    {"bytes", o.delivery.bytes},
                    {"result", "processed"},
                    {"rule", (validated && validated->rule_passed) ? *validated->rule_passed
                                                                   : o.delivery.rule}});
  }
  if (retained && retained->retention) {
    const RetentionPromise& p = *retained->retention;
    promises.push_back({{"delivery", id},
                        {"acknowledged_point", p.acknowledged_point},
                        {"survives", p.survives},
                        {"promise_after_failure", p.promise_after_failure},
                        {"evidence", p.evidence}});
  }

  int n = 0;
  auto claim = [&](json c) {
    c["id"] = "c" + std::to_string(++n);
    claims.push_back(std::move(c));
  };
  claim({{"kind", "work_requests_succeeded"},
         {"count", successes},
         {"text", std::to_string(successes) + " write work requests completed with success"}});
  if (all_transported) {
    claim({{"kind", "deliveries_transferred"},
           {"count", 1},
           {"text", "1 logical delivery transferred"}});
  }
  if (received) {
    claim({{"kind", "placed"},
           {"delivery", id},
           {"text", "every chunk was placed in the receiver's window"}});
    claim({{"kind", "notified"},
           {"delivery", id},
           {"text", "the receiver was notified of every chunk"}});
  }
  if (validated) {
    claim({{"kind", "validated"},
           {"delivery", id},
           {"text", "the complete delivery passed its rule"}});
  }
  if (processed) {
    claim({{"kind", "processed"}, {"delivery", id}, {"text", "the processing step succeeded"}});
  }
  if (retained && retained->retention && retained->retention->survives != "process-running") {
    claim({{"kind", "durable"},
           {"delivery", id},
           {"survives", retained->retention->survives},
           {"text", "the delivery survives " + retained->retention->survives}});
  }

  const ReceiptContext& c = o.context;
  json bundle{
      {"schema", "writ.evidence/1"},
      {"context",
       {{"operation", c.operation.empty() ? json() : json(c.operation)},
        {"transport", c.transport.empty() ? json() : json(c.transport)},
        {"device", c.device.empty() ? json() : json(c.device)},
        {"memory_type", c.memory_type.empty() ? json() : json(c.memory_type)},
        {"software_release", c.software_release.empty() ? json() : json(c.software_release)},
        // "default" promises nothing nameable: stated as not stated.
        {"completion_level", c.completion_level.empty() || c.completion_level == "default"
                                 ? json()
                                 : json(c.completion_level)}}},
      {"deliveries",
       json::array({{{"id", id}, {"bytes", o.delivery.bytes}, {"portions", portions}}})},
      {"work_completions", wcs},
      {"placement", placement},
      {"notifications", notifications},
      {"acknowledgements", acks},
      {"retention_promises", promises},
      {"claims", claims}};
  return bundle.dump(2);
}

}  // namespace writ
