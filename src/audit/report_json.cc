// ReportToJson: the writ.audit/1 document, fields in the contract's order.
#include <nlohmann/json.hpp>

#include "writ/audit.h"

namespace writ::audit {
namespace {

nlohmann::ordered_json CheckJson(const ReceiptCheck& check, bool attributed) {
  return {{"where", check.where},       {"state", ToString(check.state)}, {"rung", check.rung},
          {"delivery", check.delivery}, {"attributed", attributed},       {"key_id", check.key_id},
          {"problem", check.problem}};
}

// R3-7: the certificate's members as checked; each member's signed failure domain beside it.
nlohmann::ordered_json CertificateJson(const CertificateCheck& cert) {
  using ordered = nlohmann::ordered_json;
  ordered members = ordered::array();
  for (const ReceiptCheck& m : cert.members) {
    ordered member = CheckJson(m, true);
    member["failure_domain"] = m.failure_domain ? ordered(*m.failure_domain) : ordered();
    members.push_back(std::move(member));
  }
  return ordered{{"problem", cert.problem},
                 {"k", cert.k ? ordered(*cert.k) : ordered()},
                 {"delivery", cert.delivery},
                 {"members", std::move(members)}};
}

nlohmann::ordered_json SignaturesJson(const SignatureReport& sig) {
  using ordered = nlohmann::ordered_json;
  ordered receipts = ordered::array();
  for (const SignatureReport::Entry& e : sig.receipts)
    receipts.push_back(CheckJson(e.check, e.attributed));
  ordered out{{"pinned", sig.pinned},
              {"verified", sig.verified},
              {"keys", sig.keys},
              {"receipts", std::move(receipts)}};
  if (sig.certificate) out["certificate"] = CertificateJson(*sig.certificate);
  return out;
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
