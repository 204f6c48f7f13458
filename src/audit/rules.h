// The contract's rules: 1–7 judge each delivery, 8 judges each claim.
#pragma once

#include <cstddef>

#include "audit/evidence_index.h"
#include "writ/audit.h"

namespace writ::audit::internal {

// Rules 1–7 for bundle.deliveries[i].
DeliveryReport JudgeDelivery(const EvidenceBundle& bundle, const EvidenceIndex& index,
                             std::size_t i);

// Rule 8, given the deliveries already judged (parallel to bundle.deliveries).
struct ClaimFacts {
  uint64_t successful_records = 0;
  uint64_t transferred = 0;  // deliveries with transport established
  uint64_t processed = 0;    // deliveries with processing established
};
ClaimVerdict JudgeClaim(const Claim& claim, const EvidenceIndex& index,
                        const std::vector<DeliveryReport>& deliveries, const ClaimFacts& facts);

// Audit() of `bundle`, its completion records being `records` when given.
AuditReport AuditOf(const EvidenceBundle& bundle, const CompactRecords* records);

}  // namespace writ::audit::internal
