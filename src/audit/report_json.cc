// ReportToJson: the writ.audit/1 document, fields in the contract's order.
#include <nlohmann/json.hpp>

#include "writ/audit.h"

namespace writ::audit {

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
  for (const ClaimVerdict& c : report.claims)
    claims.push_back({{"id", c.id}, {"verdict", ToString(c.verdict)}, {"reason", c.reason}});
  doc["claims"] = std::move(claims);
  doc["missing_context"] = report.missing_context;
  ordered unattributed = ordered::array();
  for (const UnattributedEntry& e : report.unattributed)
    unattributed.push_back(
        {{"kind", ToString(e.kind)}, {"index", e.index}, {"delivery", e.delivery}});
  doc["unattributed"] = std::move(unattributed);
  doc["questions"] = report.questions;
  // The bundle's strings were valid UTF-8 when parsed; `replace` keeps dump() from ever throwing.
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace writ::audit
