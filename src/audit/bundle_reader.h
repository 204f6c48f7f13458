// Reads a writ.evidence/1 document in one streaming pass (nlohmann's SAX
// interface) straight into an EvidenceBundle: no JSON tree is built, so a
// bundle of 100,000 completions costs little more than lexing it.
//
// Which error is reported: invalid JSON (or absurd nesting) first, then a
// missing or wrong `schema`, then the first bad field in document order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "audit/compact_records.h"
#include "audit/field_value.h"
#include "writ/audit.h"

namespace writ::audit::internal {

// What a JSON container is in the schema; kIgnored for unknown fields' values.
enum class Slot : uint8_t {
  kIgnored,
  kRoot,
  kContext,
  kDeliveries,
  kDelivery,
  kPortions,
  kPortion,
  kRecords,
  kRecord,
  kPlacements,
  kPlacement,
  kNotifications,
  kNotification,
  kAcks,
  kAck,
  kPromises,
  kPromise,
  kClaims,
  kClaim,
};

class BundleReader {
 public:
  BundleReader() = default;
  // Completion records go to `records` instead of the bundle (the audit's own path).
  explicit BundleReader(CompactRecords* records) : records_(records) {}

  // The SAX interface of nlohmann::json::sax_parse.
  bool null() { return OnValue({FieldValue::Type::kNull}); }
  bool boolean(bool) { return OnValue({FieldValue::Type::kBool}); }
  bool number_integer(int64_t v) { return OnValue({FieldValue::Type::kInteger, v}); }
  bool number_unsigned(uint64_t v) { return OnValue({FieldValue::Type::kUnsigned, 0, v}); }
  bool number_float(double, const std::string& raw) {
    // nlohmann reads an integer past 64 bits as a float; rule 15 calls it out of range.
    const bool huge = raw.find_first_of(".eE") == std::string::npos;
    return OnValue({FieldValue::Type::kFloat, 0, 0, nullptr, huge});
  }
  bool string(std::string& v) { return OnValue({FieldValue::Type::kString, 0, 0, &v}); }
  bool binary(nlohmann::json::binary_t&) { return OnValue({FieldValue::Type::kNull}); }
  bool start_object(std::size_t) { return OnValue({FieldValue::Type::kObject}); }
  bool start_array(std::size_t) { return OnValue({FieldValue::Type::kArray}); }
  bool end_object();
  bool end_array();
  bool key(std::string& k);
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex);

  // After sax_parse: the bundle, or the error that counts most.
  Result<EvidenceBundle> Finish();

 private:
  struct Frame {
    Slot slot = Slot::kIgnored;
    bool is_array = false;
    std::size_t next_index = 0;  // arrays: index of the next element
    std::string key;             // objects: the key being read
    std::vector<std::string> keys;
    std::unordered_set<std::string> key_set;  // once an object has many keys

    bool Repeats(const std::string& k);
  };

  bool OnValue(FieldValue v);
  bool Open(Slot slot, bool is_array);
  Slot Element(Slot list, const FieldValue& v);
  Slot Field(Slot object, const std::string& key, const FieldValue& v);
  Slot RootField(const std::string& key, const FieldValue& v);
  void ContextField(const std::string& key, const FieldValue& v);
  Slot DeliveryField(const std::string& key, const FieldValue& v);
  void PortionField(const std::string& key, const FieldValue& v);
  void RecordField(const std::string& key, const FieldValue& v);
  void ClaimField(const std::string& key, const FieldValue& v);
  void PromiseField(const std::string& key, const FieldValue& v);
  void Schema(const FieldValue& v);
  void Begin(Slot element);
  void Finish(Slot element);
  void FinishDelivery();
  void FinishPortion();
  void FinishRecord();
  void FinishClaim();

  // Records the first field error; building stops, reading goes on (for syntax and schema).
  void Fail(std::string message);
  // Fails with "<path of the field being read>: <error>" unless `error` is empty.
  void Check(const std::string& error);
  bool stopped() const { return !field_error_.empty(); }
  // Path of the value under frames_[0..n): "deliveries[0].portions[2]".
  std::string PathThrough(std::size_t n) const;
  std::string FieldPath() const { return PathThrough(depth_); }
  std::string ContainerPath() const { return PathThrough(depth_ - 1); }

  std::vector<Frame> frames_;  // reused; frames_[0..depth_) are open
  std::size_t depth_ = 0;
  EvidenceBundle bundle_;
  CompactRecords* records_ = nullptr;

  std::string hard_error_;  // invalid JSON, nesting, not an object
  enum class SchemaState { kAbsent, kGood, kBad } schema_ = SchemaState::kAbsent;
  std::string schema_error_;
  std::string field_error_;

  // The element being read in each list (only one of each is open at a time).
  std::unordered_set<std::string> delivery_ids_;
  uint64_t total_bytes_ = 0;
  Delivery delivery_;
  bool delivery_has_id_ = false, delivery_has_bytes_ = false, delivery_has_portions_ = false;
  Portion portion_;
  bool portion_has_wr_id_ = false, portion_has_bytes_ = false;
  WorkCompletion record_;
  bool record_has_wr_id_ = false, record_has_status_ = false;
  // Read before the status is known; kept only on a success record (rule 2).
  WorkCompletion::SuccessDetail detail_;
  std::string detail_error_;
  PlacementEntry placement_;
  bool placement_has_delivery_ = false, placement_has_basis_ = false;
  Notification notification_;
  Acknowledgement ack_;
  RetentionPromise promise_;
  // A claim's kind decides which fields count, and it may come last: they wait here.
  Claim claim_;
  bool claim_has_id_ = false, claim_has_kind_ = false;
  bool claim_has_count_ = false, claim_has_delivery_ = false;
  std::string claim_count_error_, claim_delivery_error_, claim_survives_error_;
};

}  // namespace writ::audit::internal
