// Audit(): the rules applied to a whole bundle.
#include "writ/audit.h"

#include <string_view>
#include <unordered_set>

#include "audit/evidence_index.h"
#include "audit/rules.h"

namespace writ::audit {

namespace {

std::vector<std::string> MissingContext(const Context& c) {
  std::vector<std::string> missing;
  if (!c.operation) missing.emplace_back("operation");
  if (!c.transport) missing.emplace_back("transport");
  if (!c.device) missing.emplace_back("device");
  if (!c.memory_type) missing.emplace_back("memory_type");
  if (!c.software_release) missing.emplace_back("software_release");
  if (!c.completion_level) missing.emplace_back("completion_level");
  return missing;
}

// Rule 16: the deliveries' questions, then the unsupported claims', each once, in input order.
std::vector<std::string> GatherQuestions(const AuditReport& report) {
  std::vector<std::string> questions;
  std::unordered_set<std::string_view> seen;
  auto add = [&](const std::string& q) {
    if (!q.empty() && seen.insert(q).second) questions.push_back(q);
  };
  for (const DeliveryReport& d : report.deliveries)
    for (const std::string& q : d.questions) add(q);
  for (const ClaimVerdict& c : report.claims)
    if (c.verdict == Verdict::kNotSupported) add(c.question);
  return questions;
}

uint64_t Successful(const EvidenceBundle& bundle) {
  uint64_t successful = 0;
  for (const WorkCompletion& record : bundle.work_completions)
    if (record.success()) ++successful;
  return successful;
}

}  // namespace

namespace internal {

AuditReport AuditOf(const EvidenceBundle& bundle, const CompactRecords* records) {
  const EvidenceIndex index = IndexEvidence(bundle, records);
  AuditReport report;
  ClaimFacts facts;
  report.records = records ? records->count() : bundle.work_completions.size();
  report.successful = records ? records->successful() : Successful(bundle);
  report.failed = report.records - report.successful;
  facts.successful_records = report.successful;
  report.logical_deliveries = bundle.deliveries.size();

  report.deliveries.reserve(bundle.deliveries.size());
  for (std::size_t i = 0; i < bundle.deliveries.size(); ++i) {
    DeliveryReport d = JudgeDelivery(bundle, index, i);
    // The parser guarantees the deliveries' bytes add up within 64 bits.
    if (d.placement != PlacementState::kNotEstablished) report.placed_bytes += d.bytes;
    if (d.transport == TransportState::kEstablished) ++facts.transferred;
    if (d.processing == ProcessingState::kEstablished) ++facts.processed;
    report.deliveries.push_back(std::move(d));
  }

  report.claims.reserve(bundle.claims.size());
  for (const Claim& claim : bundle.claims)
    report.claims.push_back(JudgeClaim(claim, index, report.deliveries, facts));

  report.missing_context = MissingContext(bundle.context);
  report.unattributed = index.unattributed;
  report.questions = GatherQuestions(report);
  return report;
}

}  // namespace internal

AuditReport Audit(const EvidenceBundle& bundle) { return internal::AuditOf(bundle, nullptr); }

}  // namespace writ::audit
