
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/printable.h"
#include "receipt/canonical_json.h"
#include "receipt/merkle.h"
#include "receipt/strict_json.h"
#include "writ/receipt.h"

namespace writ {
namespace {

using json = nlohmann::json;

// The fields of the signed form (ReceiptJsonValue); any other field is refused, so that
// nothing unsigned can be read as part of a receipt.
constexpr std::string_view kTopFields[] = {"schema",
                                           "rung",
                                           "delivery",
                                           "observer",
                                           "issuer",
                                           "issued_at",
                                           "context",
                                           "statement",
                                           "does_not_establish",
                                           "rule",
                                           "step",
                                           "observed_chunks",
                                           "signature",
                                           "retention",
                                           "acknowledged_point",
                                           "survives",
                                           "promise_after_failure",
                                           "evidence",
                                           "failure_domain"};
constexpr std::string_view kDeliveryFields[] = {"id",     "bytes",  "rule",
                                                "digest", "chunks", "chunk_size"};
constexpr std::string_view kContextFields[] = {
    "operation",   "transport",        "provider",         "device",
    "memory_type", "software_release", "completion_level", "notes"};
constexpr std::string_view kSignatureFields[] = {"algorithm", "key_id", "public_key", "value",
                                                 "root",      "path",   "leaf_index", "leaves"};
constexpr std::string_view kGroupFields[] = {"root", "path", "leaf_index", "leaves"};
constexpr std::string_view kPathStepFields[] = {"side", "hash"};

// Strict field readers: each names the JSON path of what is wrong.
class Reader {
 public:
  explicit Reader(const json& object, std::string path) : j_(object), path_(std::move(path)) {}

  Status String(const char* key, std::string& out) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Status::Malformed(path_ + key + ": missing");
    if (!it->is_string()) return Status::Malformed(path_ + key + ": expected string");
    out = it->get<std::string>();
    return Status::Ok();
  }
  Status NonEmptyString(const char* key, std::string& out) const {
    WRIT_RETURN_IF_ERROR(String(key, out));
    if (out.empty()) return Status::Malformed(path_ + key + ": empty");
    return Status::Ok();
  }
  Status Unsigned(const char* key, uint64_t& out) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Status::Malformed(path_ + key + ": missing");
    if (!it->is_number_unsigned())
      return Status::Malformed(path_ + key + ": expected unsigned integer");
    out = it->get<uint64_t>();
    return Status::Ok();
  }
  Result<const json*> Object(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Status::Malformed(path_ + key + ": missing");
    if (!it->is_object()) return Status::Malformed(path_ + key + ": expected object");
    return &*it;
  }
  bool Has(const char* key) const { return j_.contains(key); }

 private:
  const json& j_;
  std::string path_;
};

Status ContextFromJson(const json& j, ReceiptContext& c) {
  WRIT_RETURN_IF_ERROR(receipt::CheckKnownFields(j, "context.", kContextFields));
  Reader r(j, "context.");
  WRIT_RETURN_IF_ERROR(r.String("operation", c.operation));
  WRIT_RETURN_IF_ERROR(r.String("transport", c.transport));
  WRIT_RETURN_IF_ERROR(r.String("provider", c.provider));
  WRIT_RETURN_IF_ERROR(r.String("device", c.device));
  WRIT_RETURN_IF_ERROR(r.String("memory_type", c.memory_type));
  WRIT_RETURN_IF_ERROR(r.String("software_release", c.software_release));
  WRIT_RETURN_IF_ERROR(r.String("completion_level", c.completion_level));
  // Required even when empty: the signed form always has it, and a receipt without it
  // would re-serialise to the signed bytes with a signed field gone.
  auto notes = j.find("notes");
  if (notes == j.end()) return Status::Malformed("context.notes: missing");
  if (!notes->is_array()) return Status::Malformed("context.notes: expected array");
  for (size_t i = 0; i < notes->size(); ++i) {
    if (!(*notes)[i].is_string()) {
      return Status::Malformed("context.notes[" + std::to_string(i) + "]: expected string");
    }
    c.notes.push_back((*notes)[i].get<std::string>());
  }
  return Status::Ok();
}

Status DeliveryFromJson(const json& top, DeliveryRef& out) {
  Reader top_reader(top, "");
  WRIT_ASSIGN_OR_RETURN(const json* delivery, top_reader.Object("delivery"));
  WRIT_RETURN_IF_ERROR(receipt::CheckKnownFields(*delivery, "delivery.", kDeliveryFields));
  Reader d(*delivery, "delivery.");
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("id", out.id));
  WRIT_RETURN_IF_ERROR(d.Unsigned("bytes", out.bytes));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("rule", out.rule));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("digest", out.digest));
  WRIT_RETURN_IF_ERROR(d.Unsigned("chunks", out.chunks));
  return d.Unsigned("chunk_size", out.chunk_size);
}

// Rung-specific fields: required on their rung, refused on any other.
Status RungFieldsFromJson(const json& j, Receipt& r) {
  Reader top(j, "");
  auto only_on = [&](const char* key, ReceiptRung owner) -> Status {
    if (top.Has(key) && r.rung != owner) {
      return Status::Malformed(std::string(key) + ": not allowed on a " +
                               std::string(ReceiptRungName(r.rung)) + " receipt");
    }
    return Status::Ok();
  };
  WRIT_RETURN_IF_ERROR(only_on("rule", ReceiptRung::kValidated));
  WRIT_RETURN_IF_ERROR(only_on("step", ReceiptRung::kProcessed));
  for (const char* key :
       {"retention", "acknowledged_point", "survives", "promise_after_failure", "evidence"}) {
    WRIT_RETURN_IF_ERROR(only_on(key, ReceiptRung::kRetained));
  }
  if (r.rung == ReceiptRung::kValidated) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("rule", r.rule_passed.emplace()));
  }
  if (r.rung == ReceiptRung::kProcessed) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("step", r.processing_step.emplace()));
  }
  if (r.rung == ReceiptRung::kRetained) {
    RetentionPromise& p = r.retention.emplace();
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("retention", p.retention));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("acknowledged_point", p.acknowledged_point));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("survives", p.survives));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("promise_after_failure", p.promise_after_failure));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("evidence", p.evidence));
  }
  return Status::Ok();
}

// The group form's inclusion proof (merkle.h); each field required.
Status GroupFromJson(const json& sig, ReceiptSignature& out) {
  Reader s(sig, "signature.");
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("root", out.root));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaf_index", out.leaf_index));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaves", out.leaves));
  auto path = sig.find("path");
  if (path == sig.end()) return Status::Malformed("signature.path: missing");
  if (!path->is_array()) return Status::Malformed("signature.path: expected array");
  for (size_t i = 0; i < path->size(); ++i) {
    const std::string at = "signature.path[" + std::to_string(i) + "].";
    const json& step = (*path)[i];
    if (!step.is_object()) {
      return Status::Malformed("signature.path[" + std::to_string(i) + "]: expected object");
    }
    WRIT_RETURN_IF_ERROR(receipt::CheckKnownFields(step, at, kPathStepFields));
    Reader r(step, at);
    MerkleStep& parsed = out.path.emplace_back();
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("side", parsed.side));
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("hash", parsed.hash));
  }
  return Status::Ok();
}

Status SignatureFromJson(const json& j, Receipt& r) {
  Reader top(j, "");
  if (!top.Has("signature")) return Status::Ok();
  WRIT_ASSIGN_OR_RETURN(const json* sig, top.Object("signature"));
  WRIT_RETURN_IF_ERROR(receipt::CheckKnownFields(*sig, "signature.", kSignatureFields));
  Reader s(*sig, "signature.");
  ReceiptSignature& parsed = r.signature.emplace();
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("algorithm", parsed.algorithm));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("key_id", parsed.key_id));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("public_key", parsed.public_key));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("value", parsed.value));
  if (parsed.algorithm == receipt::kGroupSignatureAlgorithm) return GroupFromJson(*sig, parsed);
  for (std::string_view key : kGroupFields) {
    if (s.Has(std::string(key).c_str())) {
      return Status::Malformed("signature." + std::string(key) + ": only in the " +
                               std::string(receipt::kGroupSignatureAlgorithm) + " form");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ReceiptToJson(const Receipt& r) {
  std::string out;
  receipt::AppendReceiptJson(out, r);
  return out;
}

Result<Receipt> ReceiptFromJson(std::string_view text) {
  WRIT_ASSIGN_OR_RETURN(json j, receipt::ParseJsonWithoutDuplicateKeys(text, "receipt"));
  if (!j.is_object()) return Status::Malformed("receipt: expected a JSON object");
  WRIT_RETURN_IF_ERROR(receipt::CheckKnownFields(j, "", kTopFields));
  Reader top(j, "");
  Receipt r;
  std::string schema, rung;
  WRIT_RETURN_IF_ERROR(top.String("schema", schema));
  if (schema != kReceiptSchema)
    return Status::Malformed("schema: expected " + std::string(kReceiptSchema));
  WRIT_RETURN_IF_ERROR(top.String("rung", rung));
  auto parsed_rung = ParseReceiptRung(rung);
  if (!parsed_rung.ok()) return Status::Malformed(parsed_rung.status().message()).Annotate("rung");
  r.rung = *parsed_rung;
  WRIT_RETURN_IF_ERROR(DeliveryFromJson(j, r.delivery));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("observer", r.observer));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issuer", r.issuer));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issued_at", r.issued_at));
  WRIT_ASSIGN_OR_RETURN(const json* context, top.Object("context"));
  WRIT_RETURN_IF_ERROR(ContextFromJson(*context, r.context));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("statement", r.statement));
  WRIT_RETURN_IF_ERROR(top.String("does_not_establish", r.does_not_establish));
  WRIT_RETURN_IF_ERROR(RungFieldsFromJson(j, r));
  WRIT_RETURN_IF_ERROR(SignatureFromJson(j, r));
  if (top.Has("observed_chunks")) {
    WRIT_RETURN_IF_ERROR(top.Unsigned("observed_chunks", r.observed_chunks.emplace()));
  }
  if (top.Has("failure_domain")) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("failure_domain", r.failure_domain.emplace()));
  }
  return r;
}

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
}

}  // namespace writ
