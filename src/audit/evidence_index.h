// One pass over each list of the bundle, so that every rule reads its facts
// from hash maps: the audit stays O(records + portions + entries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "audit/compact_records.h"
#include "writ/audit.h"

namespace writ::audit::internal {

// What the bundle says about one work request id.
// 32-bit counts: a bundle held in memory cannot name one id 2^32 times, and
// 24 bytes instead of 32 per id is 8 MB less at a million ids.
struct RequestFacts {
  uint32_t successes = 0;  // success records
  uint32_t errors = 0;     // error records
  uint32_t portions = 0;   // portions naming it, over all deliveries
  const WorkCompletion* first_error = nullptr;
};

// wr_id → RequestFacts: open addressing over a small array of indices into a
// dense array, so 100,000 requests cost two allocations, not 100,000 nodes.
class RequestTable {
 public:
  // Sized once for at most `capacity` distinct ids; never rehashes.
  explicit RequestTable(std::size_t capacity);
  // The id's entry number, adding it when new.
  uint32_t Intern(std::string_view wr_id);
  RequestFacts& at(uint32_t entry) { return entries_[entry].facts; }
  const RequestFacts& at(uint32_t entry) const { return entries_[entry].facts; }

 private:
  struct Entry {  // no stored hash: ids are short, comparing them is as cheap
    std::string_view key;
    RequestFacts facts;
  };
  // The slot holding `key`, or the empty slot where it would go.
  std::size_t Locate(std::string_view key, std::size_t hash) const;

  std::vector<uint32_t> slots_;  // 0 = empty, else 1 + index into entries_
  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
};

// How one acknowledgement bears on the delivery it names (rules 5 and 6).
enum class AckBearing {
  kEstablishes,  // names the delivery, result validated|processed, a rule, no wrong bytes
  kFails,        // names the delivery, result failed, a rule, no wrong bytes (rule 12)
  kWrongBytes,   // its byte count is not the delivery's
  kNoResult,     // states no result
  kNoRule,       // states a result but names no rule
};
AckBearing Classify(const Acknowledgement& ack, const Delivery& delivery);

// Everything the bundle says about one delivery (indices into the bundle's lists).
struct DeliveryEvidence {
  std::optional<PlacementBasis> placement;         // the strongest entry
  std::optional<std::size_t> notification;         // the first naming it, without a portion
  std::vector<std::size_t> portion_notifications;  // naming it and one portion (rule 11)
  std::optional<std::size_t> validating_ack;
  std::optional<std::size_t> processing_ack;
  std::optional<std::size_t> failing_ack;         // the first that says it failed validation
  std::vector<std::size_t> other_acks;            // name it, but do not establish validation
  std::optional<std::size_t> strongest_promise;   // complete
  std::optional<std::size_t> incomplete_promise;  // the first incomplete or overreaching one
};

struct EvidenceIndex {
  explicit EvidenceIndex(std::size_t request_capacity) : requests(request_capacity) {}

  RequestTable requests;
  // The request entry of every portion, deliveries one after the other.
  std::vector<uint32_t> portion_requests;
  std::vector<std::size_t> first_portion;  // per delivery: its start in portion_requests
  std::unordered_map<std::string_view, std::size_t> delivery_by_id;
  std::vector<DeliveryEvidence> evidence;  // parallel to bundle.deliveries
  // Entries that name no delivery: they may be about any of them.
  std::vector<std::size_t> unattributed_acks;
  std::vector<std::size_t> unattributed_promises;
  // Entries naming a delivery id the bundle does not have (rule 14), in list order.
  std::vector<UnattributedEntry> unattributed;
};

// The index keeps string_views into `bundle` and `records`, which must outlive it.
// The completion records are `records` when given, else bundle.work_completions.
EvidenceIndex IndexEvidence(const EvidenceBundle& bundle, const CompactRecords* records = nullptr);

// "acknowledgement "passed"" or "acknowledgements[3]".
std::string AckName(const EvidenceBundle& bundle, std::size_t index);

}  // namespace writ::audit::internal
