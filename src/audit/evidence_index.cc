#include "audit/evidence_index.h"

#include <functional>

#include "audit/sentences.h"

namespace writ::audit::internal {

RequestTable::RequestTable(std::size_t capacity) {
  std::size_t size = 16;
  while (size < 2 * capacity) size *= 2;  // load factor ≤ 1/2
  slots_.assign(size, 0);
  mask_ = size - 1;
  entries_.reserve(capacity);
}

std::size_t RequestTable::Locate(std::string_view key, std::size_t hash) const {
  std::size_t i = hash & mask_;
  while (slots_[i] != 0) {
    const Entry& entry = entries_[slots_[i] - 1];
    if (entry.key == key) break;
    i = (i + 1) & mask_;
  }
  return i;
}

uint32_t RequestTable::Intern(std::string_view wr_id) {
  const std::size_t hash = std::hash<std::string_view>{}(wr_id);
  const std::size_t i = Locate(wr_id, hash);
  if (slots_[i] == 0) {
    entries_.push_back(Entry{wr_id, {}});
    slots_[i] = static_cast<uint32_t>(entries_.size());
  }
  return slots_[i] - 1;
}

AckBearing Classify(const Acknowledgement& ack, const Delivery& delivery) {
  if (ack.bytes && *ack.bytes != delivery.bytes) return AckBearing::kWrongBytes;
  if (!ack.result) return AckBearing::kNoResult;
  if (!ack.rule) return AckBearing::kNoRule;
  return ack.result == AckResult::kFailed ? AckBearing::kFails : AckBearing::kEstablishes;
}

std::string AckName(const EvidenceBundle& bundle, std::size_t index) {
  const auto& label = bundle.acknowledgements[index].label;
  if (label) return "acknowledgement " + Quoted(*label);
  return "acknowledgements[" + std::to_string(index) + "]";
}

namespace {

using EntryKind = UnattributedEntry::Kind;

// The delivery `id` names, or nullopt after listing the entry as unattributed (rule 14).
std::optional<std::size_t> Attribute(EvidenceIndex& index, const std::string& id, EntryKind kind,
                                     std::size_t entry) {
  auto found = index.delivery_by_id.find(id);
  if (found != index.delivery_by_id.end()) return found->second;
  index.unattributed.push_back(UnattributedEntry{kind, entry, id});
  return std::nullopt;
}

void IndexNotifications(const EvidenceBundle& bundle, EvidenceIndex& index) {
  for (std::size_t i = 0; i < bundle.notifications.size(); ++i) {
    const Notification& n = bundle.notifications[i];
    if (!n.delivery) continue;
    const auto found = Attribute(index, *n.delivery, EntryKind::kNotification, i);
    if (!found) continue;
    DeliveryEvidence& evidence = index.evidence[*found];
    if (n.portion) {
      evidence.portion_notifications.push_back(i);
    } else if (!evidence.notification) {
      evidence.notification = i;
    }
  }
}

void IndexAcknowledgements(const EvidenceBundle& bundle, EvidenceIndex& index) {
  for (std::size_t i = 0; i < bundle.acknowledgements.size(); ++i) {
    const Acknowledgement& ack = bundle.acknowledgements[i];
    if (!ack.delivery) {
      index.unattributed_acks.push_back(i);
      continue;
    }
    // An acknowledgement of a delivery this bundle does not hold is about none of its deliveries.
    const auto found = Attribute(index, *ack.delivery, EntryKind::kAcknowledgement, i);
    if (!found) continue;
    DeliveryEvidence& evidence = index.evidence[*found];
    const AckBearing bearing = Classify(ack, bundle.deliveries[*found]);
    if (bearing == AckBearing::kEstablishes) {
      if (!evidence.validating_ack) evidence.validating_ack = i;
    } else if (bearing == AckBearing::kFails) {
      if (!evidence.failing_ack) evidence.failing_ack = i;
    } else {
      evidence.other_acks.push_back(i);
    }
    // Rule 6 asks only that it name the delivery; a wrong byte count means it is about other bytes.
    if (ack.result == AckResult::kProcessed && bearing != AckBearing::kWrongBytes &&
        !evidence.processing_ack) {
      evidence.processing_ack = i;
    }
  }
}

void IndexPromises(const EvidenceBundle& bundle, EvidenceIndex& index) {
  for (std::size_t i = 0; i < bundle.retention_promises.size(); ++i) {
    const RetentionPromise& promise = bundle.retention_promises[i];
    if (!promise.delivery) {
      index.unattributed_promises.push_back(i);
      continue;
    }
    const auto found = Attribute(index, *promise.delivery, EntryKind::kRetentionPromise, i);
    if (!found) continue;
    DeliveryEvidence& evidence = index.evidence[*found];
    if (!promise.complete() || promise.overreaches()) {
      if (!evidence.incomplete_promise) evidence.incomplete_promise = i;
    } else if (!evidence.strongest_promise ||
               *bundle.retention_promises[*evidence.strongest_promise].survives <
                   *promise.survives) {
      evidence.strongest_promise = i;
    }
  }
}

void TallyError(RequestTable& requests, const WorkCompletion& record) {
  RequestFacts& tally = requests.at(requests.Intern(record.wr_id));
  ++tally.errors;
  if (!tally.first_error) tally.first_error = &record;
}

void TallyRecords(const EvidenceBundle& bundle, const CompactRecords* records,
                  RequestTable& requests) {
  if (!records) {
    for (const WorkCompletion& record : bundle.work_completions) {
      if (record.success()) {
        ++requests.at(requests.Intern(record.wr_id)).successes;
      } else {
        TallyError(requests, record);
      }
    }
    return;
  }
  // Counts do not depend on the order; the first error of an id is the first in errors().
  for (std::size_t i = 0; i < records->successful(); ++i)
    ++requests.at(requests.Intern(records->success_id(i))).successes;
  for (const WorkCompletion& record : records->errors()) TallyError(requests, record);
}

}  // namespace

EvidenceIndex IndexEvidence(const EvidenceBundle& bundle, const CompactRecords* records) {
  // Every distinct id comes from a record or a portion, so this bounds the table.
  const std::size_t record_count = records ? records->count() : bundle.work_completions.size();
  std::size_t request_ids = record_count;
  for (const Delivery& delivery : bundle.deliveries) request_ids += delivery.portions.size();
  EvidenceIndex index(request_ids);
  TallyRecords(bundle, records, index.requests);

  index.delivery_by_id.reserve(bundle.deliveries.size());
  index.first_portion.reserve(bundle.deliveries.size());
  index.portion_requests.reserve(request_ids - record_count);
  index.evidence.resize(bundle.deliveries.size());
  for (std::size_t i = 0; i < bundle.deliveries.size(); ++i) {
    const Delivery& delivery = bundle.deliveries[i];
    index.delivery_by_id.emplace(delivery.id, i);
    index.first_portion.push_back(index.portion_requests.size());
    for (const Portion& portion : delivery.portions) {
      const uint32_t entry = index.requests.Intern(portion.wr_id);
      ++index.requests.at(entry).portions;
      index.portion_requests.push_back(entry);
    }
  }

  for (std::size_t i = 0; i < bundle.placement.size(); ++i) {
    const PlacementEntry& entry = bundle.placement[i];
    const auto found = Attribute(index, entry.delivery, EntryKind::kPlacement, i);
    if (!found) continue;
    auto& placement = index.evidence[*found].placement;
    if (!placement || entry.basis == PlacementBasis::kObserved) placement = entry.basis;
  }

  IndexNotifications(bundle, index);
  IndexAcknowledgements(bundle, index);
  IndexPromises(bundle, index);
  return index;
}

}  // namespace writ::audit::internal
