#include "audit/bundle_reader.h"

#include <limits>

namespace writ::audit::internal {
namespace {

using Type = FieldValue::Type;

// Rule 15: unknown fields may nest; past 512 open containers (the bundle's own
// object counts as the first) the document is malformed anywhere.
constexpr std::size_t kMaxDepth = 512;
// Objects with more keys than this get a hash set for the duplicate check.
constexpr std::size_t kLinearKeyScan = 16;
constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

constexpr std::string_view kOperations[] = {"rdma_write", "rdma_write_with_imm", "send", "other"};
constexpr std::string_view kTransports[] = {"ib_rc", "roce_rc", "iwarp", "tcp",
                                            "shm",   "efa",     "other"};
constexpr std::string_view kMemoryTypes[] = {"dram", "pmem", "gpu", "file", "other"};
constexpr std::string_view kCompletionLevels[] = {"inject", "transmit", "delivery", "commit"};
constexpr std::string_view kPlacementBases[] = {"stipulated", "observed"};
constexpr std::string_view kAckResults[] = {"validated", "processed", "failed"};
constexpr std::string_view kMedia[] = {"dram", "gpu", "pmem", "disk", "replicas", "other"};

constexpr std::string_view kBadSurvives =
    "expected process-running, process-restart, power-loss or replicated:K (K ≥ 1)";

struct ClaimShape {
  std::string_view name;
  ClaimKind kind;
  bool needs_count;
  bool needs_delivery;
};

constexpr ClaimShape kClaimShapes[] = {
    {"work_requests_succeeded", ClaimKind::kWorkRequestsSucceeded, true, false},
    {"deliveries_transferred", ClaimKind::kDeliveriesTransferred, true, false},
    {"placed", ClaimKind::kPlaced, false, true},
    {"notified", ClaimKind::kNotified, false, true},
    {"validated", ClaimKind::kValidated, false, true},
    {"processed", ClaimKind::kProcessed, false, true},
    {"durable", ClaimKind::kDurable, false, true},
    {"jobs_completed", ClaimKind::kJobsCompleted, true, false},
    {"copies", ClaimKind::kCopies, true, true},
};

std::string Join(const std::string& path, std::string_view field) {
  return path.empty() ? std::string(field) : path + "." + std::string(field);
}

// Reads an optional enum field into `out`.
template <typename Enum, std::size_t N>
std::string ReadEnum(const FieldValue& v, const std::string_view (&names)[N],
                     std::optional<Enum>& out) {
  std::optional<std::size_t> index;
  std::string error = ReadName(v, names, N, /*optional=*/true, index);
  out = index ? std::optional<Enum>(static_cast<Enum>(*index)) : std::nullopt;
  return error;
}

std::string ReadSurvives(const FieldValue& v, std::optional<Survives>& out) {
  std::optional<std::string> text;
  std::string error = ReadOptionalString(v, text);
  if (!error.empty() || !text) return error;
  out = Survives::Parse(*text);
  return out ? "" : std::string(kBadSurvives);
}

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kNull: return "null";
    case Type::kBool: return "boolean";
    case Type::kInteger:
    case Type::kUnsigned:
    case Type::kFloat: return "number";
    case Type::kString: return "string";
    case Type::kObject: return "object";
    case Type::kArray: return "array";
  }
  return "value";
}

}  // namespace

bool BundleReader::Frame::Repeats(const std::string& k) {
  if (keys.size() < kLinearKeyScan) {
    for (const auto& seen : keys)
      if (seen == k) return true;
    keys.push_back(k);
    if (keys.size() == kLinearKeyScan) key_set.insert(keys.begin(), keys.end());
    return false;
  }
  return !key_set.insert(k).second;
}

std::string BundleReader::PathThrough(std::size_t n) const {
  std::string path;
  for (std::size_t i = 0; i < n; ++i) {
    const Frame& frame = frames_[i];
    if (frame.is_array) {
      // Appended piece by piece: `"[" + std::to_string(...)` trips GCC 12's -Wrestrict
      // false positive at -O3 (GCC bug 105329).
      path += '[';
      path += std::to_string(frame.next_index - 1);
      path += ']';
    } else {
      path = Join(path, frame.key);
    }
  }
  return path;
}

void BundleReader::Fail(std::string message) {
  if (field_error_.empty()) field_error_ = std::move(message);
}

void BundleReader::Check(const std::string& error) {
  if (!error.empty()) Fail(FieldPath() + ": " + error);
}

bool BundleReader::parse_error(std::size_t, const std::string&,
                               const nlohmann::detail::exception& ex) {
  std::string what = ex.what();
  // "[json.exception.parse_error.101] parse error at ..." → "parse error at ..."
  if (auto end = what.find("] "); !what.empty() && what[0] == '[' && end != std::string::npos)
    what.erase(0, end + 2);
  hard_error_ = "invalid JSON: " + what;
  return false;
}

bool BundleReader::key(std::string& k) {
  Frame& frame = frames_[depth_ - 1];
  // Rule 15: inside unknown fields keys are not judged, repeated ones included.
  if (frame.slot != Slot::kIgnored && frame.Repeats(k))
    Fail(Join(ContainerPath(), k) + ": duplicate key");
  frame.key = k;
  return true;
}

bool BundleReader::OnValue(FieldValue v) {
  const bool container = v.type == Type::kObject || v.type == Type::kArray;
  Slot child = Slot::kIgnored;
  if (depth_ == 0) {
    if (v.type != Type::kObject) {
      hard_error_ = "bundle: expected a JSON object";
      return false;
    }
    child = Slot::kRoot;
  } else {
    Frame& parent = frames_[depth_ - 1];
    if (parent.is_array) ++parent.next_index;
    if (parent.slot == Slot::kRoot && parent.key == "schema") {
      Schema(v);  // read even after a field error: a wrong schema outranks it
    } else if (parent.slot != Slot::kIgnored && !stopped()) {
      child = parent.is_array ? Element(parent.slot, v) : Field(parent.slot, parent.key, v);
    }
  }
  return container ? Open(child, v.type == Type::kArray) : true;
}

bool BundleReader::Open(Slot slot, bool is_array) {
  if (depth_ == kMaxDepth) {
    const std::string at = FieldPath();
    hard_error_ = (at.empty() ? "bundle" : at) + ": nesting deeper than " +
                  std::to_string(kMaxDepth) + " levels";
    return false;
  }
  if (frames_.size() == depth_) frames_.emplace_back();
  Frame& frame = frames_[depth_++];
  frame.slot = slot;
  frame.is_array = is_array;
  frame.next_index = 0;
  frame.key.clear();
  frame.keys.clear();
  frame.key_set.clear();
  return true;
}

bool BundleReader::end_object() {
  if (!stopped()) Finish(frames_[depth_ - 1].slot);
  --depth_;
  return true;
}

bool BundleReader::end_array() {
  --depth_;
  return true;
}

void BundleReader::Schema(const FieldValue& v) {
  if (v.type == Type::kString && *v.text == kEvidenceSchema) {
    schema_ = SchemaState::kGood;
    return;
  }
  schema_ = SchemaState::kBad;
  const std::string got =
      v.type == Type::kString
          ? nlohmann::json(*v.text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          : std::string(TypeName(v.type));
  schema_error_ = "schema: expected \"" + std::string(kEvidenceSchema) + "\", got " + got;
}

constexpr Slot ElementOf(Slot list) { return static_cast<Slot>(static_cast<uint8_t>(list) + 1); }
static_assert(ElementOf(Slot::kDeliveries) == Slot::kDelivery &&
              ElementOf(Slot::kPortions) == Slot::kPortion &&
              ElementOf(Slot::kRecords) == Slot::kRecord &&
              ElementOf(Slot::kPlacements) == Slot::kPlacement &&
              ElementOf(Slot::kNotifications) == Slot::kNotification &&
              ElementOf(Slot::kAcks) == Slot::kAck &&
              ElementOf(Slot::kPromises) == Slot::kPromise &&
              ElementOf(Slot::kClaims) == Slot::kClaim);

Slot BundleReader::Element(Slot list, const FieldValue& v) {
  if (v.type != Type::kObject) {
    Check("expected object");
    return Slot::kIgnored;
  }
  const Slot element = ElementOf(list);
  Begin(element);
  return element;
}

Slot BundleReader::Field(Slot object, const std::string& key, const FieldValue& v) {
  switch (object) {
    case Slot::kRoot: return RootField(key, v);
    case Slot::kContext: ContextField(key, v); break;
    case Slot::kDelivery: return DeliveryField(key, v);
    case Slot::kPortion: PortionField(key, v); break;
    case Slot::kRecord: RecordField(key, v); break;
    case Slot::kPlacement:
      if (key == "delivery") {
        placement_has_delivery_ = true;
        Check(ReadString(v, placement_.delivery));
      } else if (key == "basis") {
        placement_has_basis_ = true;
        std::optional<std::size_t> index;
        Check(ReadName(v, kPlacementBases, std::size(kPlacementBases), false, index));
        if (index) placement_.basis = static_cast<PlacementBasis>(*index);
      }
      break;
    case Slot::kNotification:
      if (key == "delivery")
        Check(ReadOptionalString(v, notification_.delivery));
      else if (key == "kind")
        Check(ReadOptionalString(v, notification_.kind));
      else if (key == "imm")
        Check(ReadOptionalCount(v, notification_.imm));
      else if (key == "portion" && v.type != Type::kNull)
        Check(ReadRequestId(v, notification_.portion.emplace()));
      break;
    case Slot::kAck:
      if (key == "label")
        Check(ReadOptionalString(v, ack_.label));
      else if (key == "delivery")
        Check(ReadOptionalString(v, ack_.delivery));
      else if (key == "bytes")
        Check(ReadOptionalCount(v, ack_.bytes));
      else if (key == "result")
        Check(ReadEnum(v, kAckResults, ack_.result));
      else if (key == "rule")
        Check(ReadOptionalString(v, ack_.rule));
      break;
    case Slot::kPromise: PromiseField(key, v); break;
    case Slot::kClaim: ClaimField(key, v); break;
    default: break;
  }
  return Slot::kIgnored;
}

Slot BundleReader::RootField(const std::string& key, const FieldValue& v) {
  if (key == "context") {
    if (v.type == Type::kObject) return Slot::kContext;
    if (v.type != Type::kNull) Check("expected object");
    return Slot::kIgnored;  // no context: every field unstated
  }
  static constexpr std::pair<std::string_view, Slot> kLists[] = {
      {"deliveries", Slot::kDeliveries}, {"work_completions", Slot::kRecords},
      {"placement", Slot::kPlacements},  {"notifications", Slot::kNotifications},
      {"acknowledgements", Slot::kAcks}, {"retention_promises", Slot::kPromises},
      {"claims", Slot::kClaims},
  };
  for (const auto& [name, slot] : kLists) {
    if (key != name) continue;
    if (v.type == Type::kArray) return slot;
    Check("expected array");
  }
  return Slot::kIgnored;
}

void BundleReader::ContextField(const std::string& key, const FieldValue& v) {
  Context& c = bundle_.context;
  if (key == "operation")
    Check(ReadEnum(v, kOperations, c.operation));
  else if (key == "transport")
    Check(ReadEnum(v, kTransports, c.transport));
  else if (key == "device")
    Check(ReadOptionalString(v, c.device));
  else if (key == "memory_type")
    Check(ReadEnum(v, kMemoryTypes, c.memory_type));
  else if (key == "software_release")
    Check(ReadOptionalString(v, c.software_release));
  else if (key == "completion_level")
    Check(ReadEnum(v, kCompletionLevels, c.completion_level));
}

Slot BundleReader::DeliveryField(const std::string& key, const FieldValue& v) {
  if (key == "id") {
    delivery_has_id_ = true;
    Check(ReadString(v, delivery_.id));
    if (!stopped() && !delivery_ids_.insert(delivery_.id).second)
      Fail(FieldPath() + ": duplicate delivery id \"" + delivery_.id + "\"");
  } else if (key == "bytes") {
    delivery_has_bytes_ = true;
    Check(ReadCount(v, delivery_.bytes));
  } else if (key == "portions") {
    delivery_has_portions_ = true;
    if (v.type == Type::kArray) return Slot::kPortions;
    Check("expected array");
  }
  return Slot::kIgnored;
}

void BundleReader::PortionField(const std::string& key, const FieldValue& v) {
  if (key == "wr_id") {
    portion_has_wr_id_ = true;
    Check(ReadRequestId(v, portion_.wr_id));
  } else if (key == "offset") {
    Check(ReadOptionalCount(v, portion_.offset));
  } else if (key == "bytes") {
    portion_has_bytes_ = true;
    Check(ReadCount(v, portion_.bytes));
  }
}

void BundleReader::RecordField(const std::string& key, const FieldValue& v) {
  if (key == "wr_id") {
    record_has_wr_id_ = true;
    Check(ReadRequestId(v, record_.wr_id));
  } else if (key == "status") {
    record_has_status_ = true;
    // Rule 10: any string is a status, "" included; only "success" is a success.
    if (v.type == Type::kString)
      record_.status = std::move(*v.text);
    else
      Check("expected string");
  } else if (key == "qp_num") {
    Check(ReadOptionalCount(v, record_.qp_num));
  } else if (key == "vendor_err") {
    Check(ReadOptionalInteger(v, record_.vendor_err));
  } else if (key == "opcode" || key == "byte_len") {
    // Rule 2: meaningful only on a success record, so judged once the status is known.
    const std::string error = key == "opcode" ? ReadOptionalString(v, detail_.opcode)
                                              : ReadOptionalCount(v, detail_.byte_len);
    if (!error.empty() && detail_error_.empty()) detail_error_ = FieldPath() + ": " + error;
  }
}

void BundleReader::PromiseField(const std::string& key, const FieldValue& v) {
  if (key == "delivery")
    Check(ReadOptionalString(v, promise_.delivery));
  else if (key == "acknowledged_point")
    Check(ReadOptionalString(v, promise_.acknowledged_point));
  else if (key == "survives")
    Check(ReadSurvives(v, promise_.survives));
  else if (key == "promise_after_failure")
    Check(ReadOptionalString(v, promise_.promise_after_failure));
  else if (key == "evidence")
    Check(ReadOptionalString(v, promise_.evidence));
  else if (key == "medium")
    Check(ReadEnum(v, kMedia, promise_.medium));
}

void BundleReader::ClaimField(const std::string& key, const FieldValue& v) {
  auto pending = [&](const std::string& error, std::string& slot) {
    if (!error.empty()) slot = FieldPath() + ": " + error;
  };
  if (key == "id") {
    claim_has_id_ = true;
    Check(ReadString(v, claim_.id));
  } else if (key == "kind") {
    claim_has_kind_ = true;
    Check(ReadString(v, claim_.kind_name));
  } else if (key == "text") {
    Check(ReadOptionalString(v, claim_.text));
  } else if (key == "count") {
    claim_has_count_ = true;
    uint64_t count = 0;
    pending(ReadCount(v, count), claim_count_error_);
    claim_.count = count;
  } else if (key == "delivery") {
    claim_has_delivery_ = true;
    std::string delivery;
    pending(ReadString(v, delivery), claim_delivery_error_);
    claim_.delivery = std::move(delivery);
  } else if (key == "survives") {
    pending(ReadSurvives(v, claim_.survives), claim_survives_error_);
  }
}

void BundleReader::Begin(Slot element) {
  switch (element) {
    case Slot::kDelivery:
      delivery_ = Delivery{};
      delivery_has_id_ = delivery_has_bytes_ = delivery_has_portions_ = false;
      break;
    case Slot::kPortion:
      portion_ = Portion{};
      portion_has_wr_id_ = portion_has_bytes_ = false;
      break;
    case Slot::kRecord:
      record_ = WorkCompletion{};
      record_has_wr_id_ = record_has_status_ = false;
      detail_ = WorkCompletion::SuccessDetail{};
      detail_error_.clear();
      break;
    case Slot::kPlacement:
      placement_ = PlacementEntry{};
      placement_has_delivery_ = placement_has_basis_ = false;
      break;
    case Slot::kNotification: notification_ = Notification{}; break;
    case Slot::kAck: ack_ = Acknowledgement{}; break;
    case Slot::kPromise: promise_ = RetentionPromise{}; break;
    case Slot::kClaim:
      claim_ = Claim{};
      claim_has_id_ = claim_has_kind_ = claim_has_count_ = claim_has_delivery_ = false;
      claim_count_error_.clear();
      claim_delivery_error_.clear();
      claim_survives_error_.clear();
      break;
    default: break;
  }
}

void BundleReader::Finish(Slot element) {
  auto require = [&](bool present, std::string_view field) {
    if (!present) Fail(Join(ContainerPath(), field) + ": missing");
    return present;
  };
  switch (element) {
    case Slot::kDelivery:
      if (require(delivery_has_id_, "id") && require(delivery_has_bytes_, "bytes") &&
          require(delivery_has_portions_, "portions"))
        FinishDelivery();
      break;
    case Slot::kPortion:
      if (require(portion_has_wr_id_, "wr_id") && require(portion_has_bytes_, "bytes"))
        FinishPortion();
      break;
    case Slot::kRecord:
      if (require(record_has_wr_id_, "wr_id") && require(record_has_status_, "status"))
        FinishRecord();
      break;
    case Slot::kPlacement:
      if (require(placement_has_delivery_, "delivery") && require(placement_has_basis_, "basis"))
        bundle_.placement.push_back(std::move(placement_));
      break;
    case Slot::kNotification: bundle_.notifications.push_back(std::move(notification_)); break;
    case Slot::kAck: bundle_.acknowledgements.push_back(std::move(ack_)); break;
    case Slot::kPromise: bundle_.retention_promises.push_back(std::move(promise_)); break;
    case Slot::kClaim:
      if (require(claim_has_id_, "id") && require(claim_has_kind_, "kind")) FinishClaim();
      break;
    default: break;
  }
}

void BundleReader::FinishDelivery() {
  if (delivery_.bytes > kMaxU64 - total_bytes_) {
    Fail(Join(ContainerPath(), "bytes") + ": the deliveries add up to more than 2^64-1 bytes");
    return;
  }
  total_bytes_ += delivery_.bytes;
  delivery_.portions.shrink_to_fit();  // a vector grown by doubling holds up to 2x its portions
  bundle_.deliveries.push_back(std::move(delivery_));
}

void BundleReader::FinishPortion() {
  if (portion_.offset && portion_.bytes > kMaxU64 - *portion_.offset) {
    Fail(ContainerPath() + ": offset + bytes exceeds 2^64-1");
    return;
  }
  delivery_.portions.push_back(std::move(portion_));
}

void BundleReader::FinishRecord() {
  if (record_.success()) {
    if (!detail_error_.empty()) return Fail(detail_error_);
    record_.success_detail = std::move(detail_);
  }
  if (records_) return records_->Add(std::move(record_));
  bundle_.work_completions.push_back(std::move(record_));
}

void BundleReader::FinishClaim() {
  const ClaimShape* shape = nullptr;
  for (const ClaimShape& s : kClaimShapes)
    if (s.name == claim_.kind_name) shape = &s;
  // Only the fields the claim's kind uses are read; an unknown kind is kept, never supported.
  const bool count = shape && shape->needs_count;
  const bool delivery = shape && shape->needs_delivery;
  const bool survives = shape && shape->kind == ClaimKind::kDurable;
  if (count && !claim_has_count_) return Fail(Join(ContainerPath(), "count") + ": missing");
  if (count && !claim_count_error_.empty()) return Fail(claim_count_error_);
  if (delivery && !claim_has_delivery_)
    return Fail(Join(ContainerPath(), "delivery") + ": missing");
  if (delivery && !claim_delivery_error_.empty()) return Fail(claim_delivery_error_);
  if (survives && !claim_survives_error_.empty()) return Fail(claim_survives_error_);
  claim_.kind = shape ? shape->kind : ClaimKind::kUnknown;
  if (!count) claim_.count.reset();
  if (!delivery) claim_.delivery.reset();
  if (!survives) claim_.survives.reset();
  bundle_.claims.push_back(std::move(claim_));
}

Result<EvidenceBundle> BundleReader::Finish() {
  if (!hard_error_.empty()) return Status::Malformed(hard_error_);
  if (schema_ == SchemaState::kAbsent)
    return Status::Malformed("schema: missing (expected \"" + std::string(kEvidenceSchema) + "\")");
  if (schema_ == SchemaState::kBad) return Status::Malformed(schema_error_);
  if (!field_error_.empty()) return Status::Malformed(field_error_);
  return std::move(bundle_);
}

}  // namespace writ::audit::internal
