// Rule 8: a claim is supported only when the established facts imply it.
#include "audit/rules.h"
#include "audit/sentences.h"

namespace writ::audit::internal {
namespace {

constexpr Survives kDurableFloor{Survives::Class::kProcessRestart, 0};

ClaimVerdict Supported(std::string reason) {
  ClaimVerdict v;
  v.verdict = Verdict::kSupported;
  v.reason = std::move(reason);
  return v;
}

ClaimVerdict NotSupported(std::string reason, std::string question) {
  ClaimVerdict v;
  v.verdict = Verdict::kNotSupported;
  v.reason = std::move(reason);
  v.question = std::move(question);
  return v;
}

// "No delivery has", "1 delivery has", "3 deliveries have".
std::string DeliveriesHave(uint64_t n) {
  if (n == 0) return "No delivery has";
  return Counted(n, "delivery has", "deliveries have");
}

ClaimVerdict JudgeCount(const Claim& claim, const ClaimFacts& facts) {
  const uint64_t n = *claim.count;
  switch (claim.kind) {
    case ClaimKind::kWorkRequestsSucceeded:
      if (facts.successful_records == n)
        return Supported("The bundle holds exactly " + Grouped(n) + " success " +
                         (n == 1 ? "record." : "records."));
      return NotSupported(
          "The bundle holds " +
              Counted(facts.successful_records, "success record", "success records") + ", not " +
              Grouped(n) + ".",
          "Which " + Grouped(n) + " work requests succeeded? The bundle holds " +
              Counted(facts.successful_records, "success record", "success records") + ".");
    case ClaimKind::kDeliveriesTransferred:
      if (facts.transferred >= n)
        return Supported(DeliveriesHave(facts.transferred) +
                         " transport established (every portion's work request completed with "
                         "success), at least the " +
                         Grouped(n) + " claimed.");
      return NotSupported(
          DeliveriesHave(facts.transferred) + " transport established, but the claim needs " +
              Grouped(n) + ".",
          "Which deliveries were transferred, and where are the success records for every "
          "portion of each?");
    case ClaimKind::kJobsCompleted:
      if (facts.processed >= n)
        return Supported(DeliveriesHave(facts.processed) +
                         " processing established by the receiver's acknowledgement, at least "
                         "the " +
                         Grouped(n) + " claimed.");
      return NotSupported(
          DeliveriesHave(facts.processed) +
              " processing established by an acknowledgement, but the claim needs " + Grouped(n) +
              "; work requests, portions and deliveries are not jobs.",
          "Which deliveries are the " + Grouped(n) +
              " jobs, and where is the receiver's acknowledgement that each was processed?");
    default: break;
  }
  return NotSupported("", "");
}

std::string StrongestPromise(const DeliveryReport& d) {
  switch (d.retention.kind) {
    case RetentionState::Kind::kNonePromised: return "No retention promise names " + Quoted(d.id);
    case RetentionState::Kind::kIncompletePromise:
      return "The only retention promises for " + Quoted(d.id) + " are incomplete";
    case RetentionState::Kind::kPromised:
      return "The strongest complete promise for " + Quoted(d.id) + " is " +
             d.retention.survives.ToString();
  }
  return "";
}

ClaimVerdict JudgeAboutDelivery(const Claim& claim, const DeliveryReport& d) {
  const std::string id = Quoted(d.id);
  switch (claim.kind) {
    case ClaimKind::kPlaced:
      if (d.placement != PlacementState::kNotEstablished)
        return Supported("Placement of " + id + " is " + std::string(ToString(d.placement)) +
                         (d.placement == PlacementState::kStipulated ? " by the supplier." : "."));
      return NotSupported(
          "Placement of " + id +
              " is not established: no placement entry names it, and "
              "completions never imply it.",
          "What shows that the bytes of delivery " + id + " were placed in the target's memory?");
    case ClaimKind::kNotified:
      if (d.notification == NotificationState::kEstablished)
        return Supported("A notification names " + id + ".");
      return NotSupported(
          d.notification == NotificationState::kPartial
              ? "Notifications name only some portions of " + id + "."
              : "No notification names " + id + ".",
          "Which notification told the target that delivery " + id + " had arrived?");
    case ClaimKind::kValidated:
      if (d.validation == ValidationState::kEstablished)
        return Supported("An acknowledgement names " + id + ", its result and the rule it passed.");
      if (d.validation == ValidationState::kFailed)
        return NotSupported("An acknowledgement says " + id + " failed validation.",
                            FailedValidationQuestion(id));
      return NotSupported(
          d.validation == ValidationState::kUnresolved
              ? "Validation of " + id +
                    " is unresolved: the acknowledgements about it do not establish it."
              : "No acknowledgement establishes that " + id + " was validated.",
          "Which acknowledgement names delivery " + id +
              ", its byte count and the rule it passed?");
    case ClaimKind::kProcessed:
      if (d.validation == ValidationState::kFailed)  // rule 12
        return NotSupported("An acknowledgement says " + id +
                                " failed validation, so its processing is not supported.",
                            FailedValidationQuestion(id));
      if (d.processing == ProcessingState::kEstablished)
        return Supported("An acknowledgement with result processed names " + id + ".");
      return NotSupported("No acknowledgement with result processed names " + id + ".",
                          "Which acknowledgement from the receiver says delivery " + id +
                              " was processed, and by which step?");
    case ClaimKind::kDurable: {
      const Survives needed =
          claim.survives ? std::max(*claim.survives, kDurableFloor) : kDurableFloor;
      if (d.retention.kind == RetentionState::Kind::kPromised && d.retention.survives >= needed)
        return Supported("A complete promise says " + id + " survives " +
                         d.retention.survives.ToString() + ", at least the " + needed.ToString() +
                         " a durable claim needs.");
      return NotSupported(StrongestPromise(d) +
                              "; a durable claim needs a complete promise of at least " +
                              needed.ToString() + ".",
                          "Which failure does this acknowledgement survive, and what do you "
                          "promise afterwards?");
    }
    case ClaimKind::kCopies: {
      const uint64_t n = *claim.count;
      if (d.retention.kind == RetentionState::Kind::kPromised &&
          d.retention.survives.cls == Survives::Class::kReplicated &&
          d.retention.survives.replicas >= n)
        return Supported("A complete promise says " + id + " is " +
                         d.retention.survives.ToString() + ", at least the " + Grouped(n) +
                         " copies claimed.");
      return NotSupported(
          StrongestPromise(d) + "; " + Grouped(n) +
              " copies need a complete promise of replicated:K with K of at least " + Grouped(n) +
              ".",
          "On how many hosts is delivery " + id + " retained, and what evidence shows each copy?");
    }
    default: break;
  }
  return NotSupported("", "");
}

}  // namespace

ClaimVerdict JudgeClaim(const Claim& claim, const EvidenceIndex& index,
                        const std::vector<DeliveryReport>& deliveries, const ClaimFacts& facts) {
  ClaimVerdict verdict;
  switch (claim.kind) {
    case ClaimKind::kWorkRequestsSucceeded:
    case ClaimKind::kDeliveriesTransferred:
    case ClaimKind::kJobsCompleted: verdict = JudgeCount(claim, facts); break;
    case ClaimKind::kUnknown:
      verdict = NotSupported(
          "writ audit does not know claims of kind " + Quoted(claim.kind_name) +
              ", so nothing in the bundle can support it.",
          "What evidence supports " + Quoted(claim.text ? *claim.text : claim.kind_name) + "?");
      break;
    default: {
      auto found = index.delivery_by_id.find(*claim.delivery);
      if (found == index.delivery_by_id.end()) {
        verdict = NotSupported(
            "The claim names delivery " + Quoted(*claim.delivery) + ", which is not in the bundle.",
            "Which delivery in this bundle does claim " + Quoted(claim.id) + " mean?");
      } else {
        verdict = JudgeAboutDelivery(claim, deliveries[found->second]);
      }
    }
  }
  verdict.id = claim.id;
  verdict.kind = claim.kind_name;
  verdict.text = claim.text;
  verdict.claim_kind = claim.kind;
  verdict.count = claim.count;
  verdict.delivery = claim.delivery;
  verdict.survives = claim.survives;
  return verdict;
}

}  // namespace writ::audit::internal
