// Rules 1–7: what the bundle establishes about one delivery, with a reason
// sentence for each conclusion that is not plain and the questions to ask.
#include <algorithm>
#include <limits>
#include <unordered_set>
#include <utility>

#include "audit/rules.h"
#include "audit/sentences.h"

namespace writ::audit::internal {
namespace {

struct Judgement {
  DeliveryReport& out;
  void Reason(std::string sentence) { out.reasons.push_back(std::move(sentence)); }
  void Ask(std::string question) { out.questions.push_back(std::move(question)); }
};

// Bytes of [0, delivery.bytes) that the portions cover.
uint64_t CoveredBytes(const Delivery& delivery) {
  const auto& portions = delivery.portions;
  const bool all_placed = std::all_of(portions.begin(), portions.end(),
                                      [](const Portion& p) { return p.offset.has_value(); });
  if (!all_placed) {  // without offsets only the sum can be checked
    constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();
    uint64_t sum = 0;
    for (const Portion& p : portions) sum = p.bytes > kSaturated - sum ? kSaturated : sum + p.bytes;
    return sum;
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end), clipped to the delivery
  ranges.reserve(portions.size());
  for (const Portion& p : portions) {
    const uint64_t begin = std::min(*p.offset, delivery.bytes);
    const uint64_t end = std::min(*p.offset + p.bytes, delivery.bytes);  // no overflow: parser
    if (begin < end) ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0, reach = 0;
  for (const auto& [begin, end] : ranges) {
    if (end <= reach) continue;
    covered += end - std::max(begin, reach);
    reach = end;
  }
  return covered;
}

std::string LevelMeaning(const std::optional<CompletionLevel>& level) {
  if (!level) {
    return "but the bundle does not state the completion level, so what that success attests is "
           "unknown";
  }
  switch (*level) {
    case CompletionLevel::kInject:
      return "at completion level inject: the source buffers may be reused, and the data may not "
             "yet have left the initiator";
    case CompletionLevel::kTransmit:
      return "at completion level transmit: the data left the initiator for the peer's transport, "
             "which does not show the bytes are in the target buffer";
    case CompletionLevel::kDelivery:
      return "at completion level delivery: the provider states the bytes are visible in the "
             "target buffer, yet placement is taken only from a placement entry";
    case CompletionLevel::kCommit:
      return "at completion level commit: the provider states the bytes are persistent at the "
             "target, yet retention is taken only from a complete retention promise";
  }
  return "";
}

// Rule 9: at completion level inject a success frees the source buffer; nothing was transferred.
bool InjectOnly(const Context& context, const std::string& id, Judgement& j) {
  if (context.completion_level != CompletionLevel::kInject) return false;
  j.Reason(
      "A success at completion level inject says only that the source buffers may be reused, "
      "so the transport of " +
      id + " is at most incomplete.");
  j.Ask("Which completions show that delivery " + id +
        " left the initiator, at completion level transmit or beyond?");
  return true;
}

// Rule 1: a portion counts only through its own work request's records, never through a count.
TransportState JudgeTransport(const EvidenceBundle& bundle, const EvidenceIndex& index,
                              std::size_t delivery_index, Judgement& j) {
  const Delivery& delivery = bundle.deliveries[delivery_index];
  const std::string id = Quoted(delivery.id);
  if (delivery.portions.empty()) {
    j.Reason("Delivery " + id +
             " names no portions, so no work request is known to have carried it.");
    j.Ask("Which work requests carried delivery " + id + "?");
    return TransportState::kIncomplete;
  }
  uint64_t failing = 0, missing = 0, shared = 0;
  const WorkCompletion* first_error = nullptr;
  std::vector<std::string> missing_ids, shared_ids;
  const std::size_t first = index.first_portion[delivery_index];
  for (std::size_t k = 0; k < delivery.portions.size(); ++k) {
    const Portion& portion = delivery.portions[k];
    const RequestFacts& facts = index.requests.at(index.portion_requests[first + k]);
    if (facts.errors > 0) {
      if (failing++ == 0) first_error = facts.first_error;
    } else if (facts.successes == 0) {
      if (missing++ < kListedMax) missing_ids.push_back(portion.wr_id);
    }
    if (facts.portions > 1 && shared++ < kListedMax)
      shared_ids.push_back(portion.wr_id + " (named by " + Grouped(facts.portions) + " portions)");
  }
  const uint64_t portions = delivery.portions.size();
  const uint64_t covered = CoveredBytes(delivery);

  if (failing > 0) {
    std::string detail = "status " + Quoted(first_error->status);
    if (first_error->qp_num) detail += ", qp_num " + std::to_string(*first_error->qp_num);
    if (first_error->vendor_err)
      detail += ", vendor_err " + std::to_string(*first_error->vendor_err);
    j.Reason(Grouped(failing) + " of " + Counted(portions, "portion", "portions") + " of " + id +
             (failing == 1 ? " has" : " have") + " an error record; the first, work request " +
             Quoted(first_error->wr_id) + ", has " + detail +
             " (nothing else of an error record is read).");
    j.Ask("After work request " + Quoted(first_error->wr_id) + " failed, was delivery " + id +
          " sent again, and where are the records of that attempt?");
  }
  if (missing > 0) {
    j.Reason("No success record for work request " + Listed(missing_ids, missing) + " (" +
             Grouped(missing) + " of " + Counted(portions, "portion", "portions") + " of " + id +
             "), so its transport is not established, whatever the number of records.");
    if (failing == 0)
      j.Ask("Where are the completion records for work request " + Listed(missing_ids, missing) +
            " of delivery " + id + "?");
  }
  if (shared > 0) {
    j.Reason("Work request " + Listed(shared_ids, shared) +
             " carries more than one portion; one completion record reports one work request, "
             "so it cannot attest them all.");
  }
  if (covered != delivery.bytes) {
    j.Reason("The portions of " + id + " cover " + Grouped(covered) + " of its " +
             Grouped(delivery.bytes) + " bytes.");
  }
  if ((shared > 0 || covered != delivery.bytes) && failing == 0)
    j.Ask("Which work request carried each byte of delivery " + id + "?");

  if (failing > 0) return TransportState::kFailed;
  if (missing > 0 || shared > 0 || covered != delivery.bytes) return TransportState::kIncomplete;
  j.Reason("All " + Counted(portions, "work request", "work requests") + " carrying " + id +
           " completed with success, " + LevelMeaning(bundle.context.completion_level) + ".");
  return InjectOnly(bundle.context, id, j) ? TransportState::kIncomplete
                                           : TransportState::kEstablished;
}

// What a success completion on this transport says about the remote side.
std::string TransportNote(const std::optional<Transport>& transport) {
  if (!transport) {
    return "The bundle does not state the transport, so what a success completion says about "
           "the remote side is unknown.";
  }
  switch (*transport) {
    case Transport::kIbRc:
    case Transport::kRoceRc:
      return "On " + std::string(ToString(*transport)) +
             " a success completion of a Write means the responder's adapter acknowledged it; it "
             "does not by itself show the bytes are visible in the target's memory.";
    case Transport::kIwarp:
      return "On iwarp a local Write completion may precede placement of the data in the remote "
             "buffer (RFC 5040), so completions say nothing about remote placement.";
    case Transport::kTcp:
      return "On tcp the Write is carried as messages over a TCP stream and placed by the "
             "receiver's software; a success completion says only what the provider's completion "
             "level promises.";
    case Transport::kShm:
      return "On shm both ends share one host and the bytes are copied in software; a success "
             "completion says only what the provider's completion level promises.";
    case Transport::kEfa:
      return "On efa (SRD) delivery is reliable but unordered; a success completion says only "
             "what the provider's completion level promises, not that the bytes are visible in "
             "the target's memory.";
    case Transport::kOther:
      return "The transport is \"other\", so what its success completion says about the remote "
             "side is unknown.";
  }
  return "";
}

// Rule 3: only a placement entry establishes placement.
PlacementState JudgePlacement(const EvidenceBundle& bundle, const DeliveryEvidence& evidence,
                              const Delivery& delivery, Judgement& j) {
  const std::string id = Quoted(delivery.id);
  PlacementState state = PlacementState::kNotEstablished;
  if (evidence.placement == PlacementBasis::kObserved) {
    state = PlacementState::kObserved;
  } else if (evidence.placement == PlacementBasis::kStipulated) {
    state = PlacementState::kStipulated;
    j.Reason("Placement of " + id + " is stipulated by the supplier, not observed.");
  } else {
    j.Reason("No placement entry names " + id +
             ", and placement is never inferred from completions.");
    j.Ask("What shows that the bytes of delivery " + id +
          " were placed in the target's memory: an observation, or a stipulation you stand "
          "behind?");
  }
  if (state != PlacementState::kObserved || bundle.context.transport == Transport::kIwarp)
    j.Reason(TransportNote(bundle.context.transport));
  return state;
}

// Rule 11: notifications of single portions establish notification once they cover them all.
NotificationState JudgePortionNotifications(const EvidenceBundle& bundle,
                                            const DeliveryEvidence& evidence,
                                            const Delivery& delivery, Judgement& j) {
  const std::string id = Quoted(delivery.id);
  std::unordered_set<std::string_view> notified, own;
  for (std::size_t i : evidence.portion_notifications)
    notified.insert(*bundle.notifications[i].portion);
  uint64_t covered = 0, uncovered = 0;
  std::vector<std::string> uncovered_ids;
  for (const Portion& p : delivery.portions) {
    own.insert(p.wr_id);
    if (notified.count(p.wr_id) > 0) {
      ++covered;
    } else if (uncovered++ < kListedMax) {
      uncovered_ids.push_back(p.wr_id);
    }
  }
  for (std::size_t i : evidence.portion_notifications) {
    const std::string& portion = *bundle.notifications[i].portion;
    if (own.count(portion) > 0) continue;
    j.Reason("notifications[" + std::to_string(i) + "] names portion " + Quoted(portion) +
             ", which is not a portion of " + id + ", so it covers nothing.");
    break;
  }
  const uint64_t portions = delivery.portions.size();
  if (covered == 0) return NotificationState::kNone;
  if (uncovered == 0) {
    j.Reason("Notifications name every portion of " + id +
             "; they establish neither validation nor processing.");
    return NotificationState::kEstablished;
  }
  j.Reason("Notifications name " + Grouped(covered) + " of " +
           Counted(portions, "portion", "portions") + " of " + id + "; none names work request " +
           Listed(uncovered_ids, uncovered) + ".");
  j.Ask("Which notification told the target that the rest of delivery " + id + " (work request " +
        Listed(uncovered_ids, uncovered) + ") had arrived?");
  return NotificationState::kPartial;
}

// Rule 4: a notification establishes notification, and nothing else.
NotificationState JudgeNotification(const EvidenceBundle& bundle, const DeliveryEvidence& evidence,
                                    const Delivery& delivery, Judgement& j) {
  if (!evidence.notification) return JudgePortionNotifications(bundle, evidence, delivery, j);
  const Notification& n = bundle.notifications[*evidence.notification];
  std::string what = "A notification";
  if (n.kind || n.imm) {
    what += " (";
    if (n.kind) what += *n.kind;
    if (n.kind && n.imm) what += ", ";
    if (n.imm) what += "imm " + std::to_string(*n.imm);
    what += ")";
  }
  j.Reason(what + " tells the target that " + Quoted(delivery.id) +
           " arrived; it establishes neither validation nor processing.");
  return NotificationState::kEstablished;
}

std::string AckProblem(const EvidenceBundle& bundle, std::size_t i, const Delivery& delivery) {
  const Acknowledgement& ack = bundle.acknowledgements[i];
  const std::string name = AckName(bundle, i);
  switch (Classify(ack, delivery)) {
    case AckBearing::kWrongBytes:
      return "The " + name + " names " + Quoted(delivery.id) + " with " + Grouped(*ack.bytes) +
             " bytes, but the delivery has " + Grouped(delivery.bytes) +
             ", so it is about other bytes and establishes nothing.";
    case AckBearing::kNoResult:
      return "The " + name + " names " + Quoted(delivery.id) + " but states no result.";
    case AckBearing::kNoRule:
      return "The " + name + " says " + Quoted(delivery.id) +
             (*ack.result == AckResult::kProcessed   ? " was processed"
              : *ack.result == AckResult::kValidated ? " was validated"
                                                     : " failed validation") +
             " but names no rule.";
    case AckBearing::kEstablishes:
    case AckBearing::kFails: break;
  }
  return "";
}

// Rule 12: a failed validation naming the delivery and its rule is a fact.
ValidationState ValidationFailed(const EvidenceBundle& bundle, std::size_t ack_index,
                                 const std::string& id, Judgement& j) {
  const Acknowledgement& ack = bundle.acknowledgements[ack_index];
  j.Reason("The " + AckName(bundle, ack_index) + " says " + id + " failed " + Quoted(*ack.rule) +
           ".");
  j.Ask(FailedValidationQuestion(id));
  return ValidationState::kFailed;
}

// Rule 5 (and 12: a failed validation outranks unresolved, never established).
ValidationState JudgeValidation(const EvidenceBundle& bundle, const EvidenceIndex& index,
                                const DeliveryEvidence& evidence, const Delivery& delivery,
                                Judgement& j) {
  const std::string id = Quoted(delivery.id);
  if (evidence.validating_ack) {
    const Acknowledgement& ack = bundle.acknowledgements[*evidence.validating_ack];
    j.Reason("The " + AckName(bundle, *evidence.validating_ack) + " says " + id + " passed " +
             Quoted(*ack.rule) +
             (ack.bytes ? "." : "; it states no byte count, so it is read as covering all of it."));
    if (evidence.failing_ack)
      j.Reason("The " + AckName(bundle, *evidence.failing_ack) + " says " + id +
               " failed validation; a failure does not outrank an established validation.");
  }
  const std::size_t others = evidence.other_acks.size();
  for (std::size_t k = 0; k < std::min(others, kListedMax); ++k)
    j.Reason(AckProblem(bundle, evidence.other_acks[k], delivery));
  if (others > kListedMax)
    j.Reason(Counted(others - kListedMax, "more acknowledgement", "more acknowledgements") +
             " name " + id + " without establishing its validation.");
  const std::size_t unattributed = index.unattributed_acks.size();
  if (!evidence.validating_ack && unattributed > 0) {
    j.Reason(Counted(unattributed, "acknowledgement names", "acknowledgements name") +
             " no delivery (the first is " + AckName(bundle, index.unattributed_acks[0]) +
             "), so it may be about " + id + "; it establishes nothing.");
  }
  if (evidence.validating_ack) return ValidationState::kEstablished;
  if (evidence.failing_ack) return ValidationFailed(bundle, *evidence.failing_ack, id, j);
  if (others > 0 || unattributed > 0) {
    j.Ask("Which delivery, byte count, result and rule do the acknowledgements about " + id +
          " refer to?");
    return ValidationState::kUnresolved;
  }
  j.Reason("No acknowledgement names " + id + ", so whether it was validated is unknown.");
  return ValidationState::kUnknown;
}

// Rule 6.
ProcessingState JudgeProcessing(const EvidenceBundle& bundle, const DeliveryEvidence& evidence,
                                const Delivery& delivery, Judgement& j) {
  const std::string id = Quoted(delivery.id);
  if (evidence.processing_ack) {
    j.Reason("The " + AckName(bundle, *evidence.processing_ack) + " says " + id +
             " was processed.");
    return ProcessingState::kEstablished;
  }
  j.Reason("No acknowledgement says " + id +
           " was processed; until the receiver says so, processing is unknown, neither done nor "
           "failed.");
  return ProcessingState::kUnknown;
}

std::vector<std::string> MissingPromiseFields(const RetentionPromise& promise) {
  std::vector<std::string> missing;
  if (!promise.delivery) missing.push_back("delivery");
  if (!promise.acknowledged_point) missing.push_back("acknowledged_point");
  if (!promise.survives) missing.push_back("survives");
  if (!promise.promise_after_failure) missing.push_back("promise_after_failure");
  if (!promise.evidence) missing.push_back("evidence");
  return missing;
}

// Rule 13: a promise without a medium, in a context of volatile memory, leaves a question.
void AskMedium(const EvidenceBundle& bundle, std::size_t i, const std::string& id, Judgement& j) {
  const auto memory = bundle.context.memory_type;
  if (bundle.retention_promises[i].medium ||
      (memory != MemoryType::kDram && memory != MemoryType::kGpu))
    return;
  j.Reason("The promise states no medium, and the context says the memory is " +
           std::string(ToString(*memory)) + ", which does not survive power loss.");
  j.Ask("Which medium holds delivery " + id + " at the acknowledged point of retention_promises[" +
        std::to_string(i) + "]?");
}

// Rule 13: volatile media cannot promise power loss.
RetentionState Overreaching(const EvidenceBundle& bundle, std::size_t i, const std::string& id,
                            Judgement& j) {
  const RetentionPromise& promise = bundle.retention_promises[i];
  const std::string which = "retention_promises[" + std::to_string(i) + "]";
  const std::string survives = promise.survives->ToString();
  const std::string medium(ToString(*promise.medium));
  j.Reason("The retention promise for " + id + " (" + which + ") says it survives " + survives +
           " on " + medium +
           ", which loses its contents when power goes; it counts as an "
           "incomplete promise.");
  j.Ask("The retention promise " + which + " keeps delivery " + id + " in " + medium +
        ": on which medium does it survive " + survives + "?");
  RetentionState state;
  state.kind = RetentionState::Kind::kIncompletePromise;
  return state;
}

// Rule 7: the strongest complete promise; an incomplete one counts for nothing.
RetentionState JudgeRetention(const EvidenceBundle& bundle, const EvidenceIndex& index,
                              const DeliveryEvidence& evidence, const Delivery& delivery,
                              Judgement& j) {
  const std::string id = Quoted(delivery.id);
  RetentionState state;
  if (evidence.strongest_promise) {
    state.kind = RetentionState::Kind::kPromised;
    state.survives = *bundle.retention_promises[*evidence.strongest_promise].survives;
    j.Reason("A complete retention promise (retention_promises[" +
             std::to_string(*evidence.strongest_promise) + "]) says " + id + " survives " +
             state.survives.ToString() + ".");
    AskMedium(bundle, *evidence.strongest_promise, id, j);
    return state;
  }
  std::optional<std::size_t> incomplete = evidence.incomplete_promise;
  if (!incomplete && !index.unattributed_promises.empty())
    incomplete = index.unattributed_promises[0];
  if (incomplete) {
    state.kind = RetentionState::Kind::kIncompletePromise;
    const std::vector<std::string> missing =
        MissingPromiseFields(bundle.retention_promises[*incomplete]);
    const std::string which = "retention_promises[" + std::to_string(*incomplete) + "]";
    if (missing.empty()) return Overreaching(bundle, *incomplete, id, j);
    const std::string fields = Listed(missing, missing.size());
    j.Reason(evidence.incomplete_promise
                 ? "The retention promise for " + id + " (" + which + ") does not state " + fields +
                       "; an incomplete promise counts for nothing."
                 : "The retention promise " + which + " names no delivery, so it may be about " +
                       id + "; it does not state " + fields +
                       ", and an incomplete promise counts for nothing.");
    j.Ask("The retention promise " + which + " does not state " + fields +
          (missing.size() == 1 ? ": what is it?" : ": what are they?"));
    return state;
  }
  j.Reason("No retention promise names " + id + ", so nothing is promised about its survival" +
           (evidence.validating_ack ? "; validation never implies retention." : "."));
  return state;
}

}  // namespace

DeliveryReport JudgeDelivery(const EvidenceBundle& bundle, const EvidenceIndex& index,
                             std::size_t i) {
  const Delivery& delivery = bundle.deliveries[i];
  const DeliveryEvidence& evidence = index.evidence[i];
  DeliveryReport report;
  report.id = delivery.id;
  report.bytes = delivery.bytes;
  report.portions = delivery.portions.size();
  Judgement j{report};
  report.transport = JudgeTransport(bundle, index, i, j);
  report.placement = JudgePlacement(bundle, evidence, delivery, j);
  report.notification = JudgeNotification(bundle, evidence, delivery, j);
  report.validation = JudgeValidation(bundle, index, evidence, delivery, j);
  report.processing = JudgeProcessing(bundle, evidence, delivery, j);
  report.retention = JudgeRetention(bundle, index, evidence, delivery, j);
  return report;
}

}  // namespace writ::audit::internal
