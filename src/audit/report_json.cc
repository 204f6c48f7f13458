// ReportToJson: the writ.audit/1 document, fields in the contract's order.
#include <nlohmann/json.hpp>

#include "writ/audit.h"

namespace writ::audit {
namespace {

nlohmann::ordered_json SignaturesJson(const SignatureReport& sig) {
  using ordered = nlohmann::ordered_json;
  ordered receipts = ordered::array();
  for (const SignatureReport::Entry& e : sig.receipts) {
    receipts.push_back({{"where", e.check.where},
                        {"state", ToString(e.check.state)},
                        {"rung", e.check.rung},
                        {"delivery", e.check.delivery},
                        {"attributed", e.attributed},
                        {"key_id", e.check.key_id},
                        {"problem", e.check.problem}});
  }
  return ordered{{"pinned", sig.pinned},
                 {"verified", sig.verified},
                 {"keys", sig.keys},
                 {"receipts", std::move(receipts)}};
}

}  // namespace

std::string ReportToJson(const AuditReport& report) {
  using ordered = nlohmann::ordered_json;
  ordered doc;
  doc["schema"] = kReportSchema;
  doc["records"] = report.records;
  doc["successful"] = report.successful;
  doc["failed"] = report.failed;
  doc["logical_deliveries"] = report.logical_deliveries;
  doc["placed_bytes"] = report.placed_bytes;
  ordered deliveries = ordered::array();
  for (const DeliveryReport& d : report.deliveries) {
    deliveries.push_back({
        {"id", d.id},
        {"bytes", d.bytes},
        {"portions", d.portions},
        {"transport", ToString(d.transport)},
        {"placement", ToString(d.placement)},
        {"notification", ToString(d.notification)},
        {"validation", ToString(d.validation)},
        {"processing", ToString(d.processing)},
        {"retention", d.retention.ToString()},
        {"reasons", d.reasons},
    });
  }
  doc["deliveries"] = std::move(deliveries);
  ordered claims = ordered::array();
  for (const ClaimVerdict& c : report.claims) {
    ordered claim{{"id", c.id}, {"verdict", ToString(c.verdict)}, {"reason", c.reason}};
    if (report.signatures) claim["signed_by"] = c.signed_by;  // revision 3: [] = stated, not signed
    claims.push_back(std::move(claim));
  }
  doc["claims"] = std::move(claims);
  doc["missing_context"] = report.missing_context;
  ordered unattributed = ordered::array();
  for (const UnattributedEntry& e : report.unattributed)
    unattributed.push_back(
        {{"kind", ToString(e.kind)}, {"index", e.index}, {"delivery", e.delivery}});
  doc["unattributed"] = std::move(unattributed);
  doc["questions"] = report.questions;
  if (report.signatures) doc["signatures"] = SignaturesJson(*report.signatures);
  // The bundle's strings were valid UTF-8 when parsed; `replace` keeps dump() from ever throwing.
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace writ::audit
