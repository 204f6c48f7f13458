// The receipt's canonical JSON as writ produced it before the fixed-layout writer
// (src/receipt/canonical_json.h): a nlohmann::json document, dumped (keys sorted, compact).
// Kept as the oracle the writer's bytes are compared against.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "receipt/merkle.h"
#include "writ/receipt.h"

namespace writ::dom_reference {

inline nlohmann::json DomSignature(const ReceiptSignature& s) {
  nlohmann::json j{{"algorithm", s.algorithm},
                   {"key_id", s.key_id},
                   {"public_key", s.public_key},
                   {"value", s.value}};
  if (s.algorithm != receipt::kGroupSignatureAlgorithm) return j;
  nlohmann::json path = nlohmann::json::array();
  for (const MerkleStep& step : s.path) path.push_back({{"side", step.side}, {"hash", step.hash}});
  j["root"] = s.root;
  j["path"] = std::move(path);
  j["leaf_index"] = s.leaf_index;
  j["leaves"] = s.leaves;
  return j;
}

inline nlohmann::json DomReceipt(const Receipt& r, bool with_signature) {
  const ReceiptContext& c = r.context;
  nlohmann::json j{{"schema", kReceiptSchema},
                   {"rung", ReceiptRungName(r.rung)},
                   {"delivery",
                    {{"id", r.delivery.id},
                     {"bytes", r.delivery.bytes},
                     {"rule", r.delivery.rule},
                     {"digest", r.delivery.digest},
                     {"chunks", r.delivery.chunks},
                     {"chunk_size", r.delivery.chunk_size}}},
                   {"observer", r.observer},
                   {"issuer", r.issuer},
                   {"issued_at", r.issued_at},
                   {"context",
                    {{"operation", c.operation},
                     {"transport", c.transport},
                     {"provider", c.provider},
                     {"device", c.device},
                     {"memory_type", c.memory_type},
                     {"software_release", c.software_release},
                     {"completion_level", c.completion_level},
                     {"notes", c.notes}}},
                   {"statement", r.statement},
                   {"does_not_establish", r.does_not_establish}};
  if (r.rule_passed) j["rule"] = *r.rule_passed;
  if (r.processing_step) j["step"] = *r.processing_step;
  if (r.observed_chunks) j["observed_chunks"] = *r.observed_chunks;
  if (r.failure_domain) j["failure_domain"] = *r.failure_domain;
  if (with_signature && r.signature) j["signature"] = DomSignature(*r.signature);
  if (r.retention) {
    j["retention"] = r.retention->retention;
    j["acknowledged_point"] = r.retention->acknowledged_point;
    j["survives"] = r.retention->survives;
    j["promise_after_failure"] = r.retention->promise_after_failure;
    j["evidence"] = r.retention->evidence;
  }
  return j;
}

inline std::string DomReceiptText(const Receipt& r, bool with_signature = true) {
  return DomReceipt(r, with_signature).dump();
}

}  // namespace writ::dom_reference
