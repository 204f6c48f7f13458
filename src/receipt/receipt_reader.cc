// Reading a receipt from the JSON that was signed, strictly: exactly one JSON document, no
// key duplicated anywhere, no field the signed form does not have, each field of its type;
// every error names the field. A sender reads every receipt it is sent through here, so it
// uses simdjson's DOM parser (one per thread, reused): its strings are views into the
// parser's buffer until copied into the Receipt, so reading one costs no tree of
// allocations (nlohmann's was a quarter of a small delivery's CPU, docs/benchmarks.md).

#include <simdjson.h>

#include <array>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/printable.h"
#include "receipt/merkle.h"
#include "writ/receipt.h"

namespace writ {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

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

// An object's members in document order, read from the tape once, so that finding a
// member, a duplicate or an unknown key compares views of keys rather than walking the
// tape again for every field (a receipt's objects have at most 19 members).
class MemberList {
 public:
  struct Member {
    std::string_view key;
    element value;
  };
  explicit MemberList(object members) {
    for (auto [key, value] : members) {
      if (count_ < kInline) {
        new (&inline_[count_].member) Member{key, value};
      } else {
        more_.push_back(Member{key, value});
      }
      ++count_;
    }
  }
  size_t size() const { return count_; }
  const Member& operator[](size_t i) const {
    return i < kInline ? inline_[i].member : more_[i - kInline];
  }
  const Member* Find(std::string_view key) const {
    for (size_t i = 0; i < count_; ++i) {
      if ((*this)[i].key == key) return &(*this)[i];
    }
    return nullptr;
  }

 private:
  static constexpr size_t kInline = 24;
  // Left uninitialised until a member is written: this is built for every object of every
  // receipt a sender reads.
  union Slot {
    Slot() {}
    Member member;
  };
  static_assert(std::is_trivially_copyable_v<Member> && std::is_trivially_destructible_v<Member>);
  Slot inline_[kInline];
  std::vector<Member> more_;  // only for an object of more members than a receipt has
  size_t count_ = 0;
};

// True when `value` holds a key twice in one object (a reader keeping either copy would
// show something other than what was signed); `path` then names the second, relative to
// `value` ("delivery.bytes", "signature.path[].side"). Document order decides which is
// named first.
bool FindDuplicateKey(element value, std::string& path) {
  if (value.is_array()) {
    const array items = value.get_array().value_unsafe();
    for (element item : items) {
      if (FindDuplicateKey(item, path)) {
        path = "[]" + (path.starts_with('[') ? path : "." + path);
        return true;
      }
    }
    return false;
  }
  if (!value.is_object()) return false;
  const MemberList members(value.get_object().value_unsafe());
  for (size_t index = 0; index < members.size(); ++index) {
    const MemberList::Member& member = members[index];
    for (size_t earlier = 0; earlier < index; ++earlier) {
      if (members[earlier].key == member.key) {
        path = std::string(member.key);
        return true;
      }
    }
    if (FindDuplicateKey(member.value, path)) {
      path = std::string(member.key) + (path.starts_with('[') ? path : "." + path);
      return true;
    }
  }
  return false;
}

// The text being read, for what simdjson's tree does not keep: it reads the number -0 as
// the integer 0, which the signed form never writes ("0"), so a -0 anywhere outside a
// string makes an unsigned field that reads 0 an error. Looked for once, when needed.
class SourceText {
 public:
  explicit SourceText(std::string_view text) : text_(text) {}
  bool HasNegativeZero() const {
    if (!negative_zero_) negative_zero_ = Scan();
    return *negative_zero_;
  }

 private:
  bool Scan() const {
    bool in_string = false;
    for (size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '-' && i + 1 < text_.size() && text_[i + 1] == '0' &&
                 (i + 2 == text_.size() ||
                  std::string_view(".eE0123456789").find(text_[i + 2]) == std::string_view::npos)) {
        return true;
      }
    }
    return false;
  }

  std::string_view text_;
  mutable std::optional<bool> negative_zero_;
};

// Strict field readers over one object: each error names the JSON path of what is wrong.
class Fields {
 public:
  // `path` is "" or ends in '.' ("delivery."); with an `index`, it names an array and the
  // object is its item ("signature.path" and 3: "signature.path[3].").
  Fields(const SourceText& source, object members, std::string_view path,
         std::optional<size_t> index = std::nullopt)
      : source_(source), members_(members), path_(path), index_(index) {}

  // Another object of the same text.
  Fields Nested(object members, std::string_view path,
                std::optional<size_t> index = std::nullopt) const {
    return Fields(source_, members, path, index);
  }
  Status OnlyKnown(std::span<const std::string_view> known) const {
    for (size_t i = 0; i < members_.size(); ++i) {
      const std::string_view key = members_[i].key;
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        return Status::Malformed(Printable(PathOf(key)) +
                                 ": unknown field (not part of the signed receipt)");
      }
    }
    return Status::Ok();
  }
  bool Has(std::string_view key) const { return members_.Find(key) != nullptr; }

  Status String(std::string_view key, std::string& out) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return Problem(key, "expected string");
    out.assign(text);
    return Status::Ok();
  }
  Status NonEmptyString(std::string_view key, std::string& out) const {
    WRIT_RETURN_IF_ERROR(String(key, out));
    if (out.empty()) return Problem(key, "empty");
    return Status::Ok();
  }
  // A JSON integer written without a sign, as nlohmann's "unsigned" reads it.
  Status Unsigned(std::string_view key, uint64_t& out) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    int64_t signed_value = 0;
    if (value.type() == simdjson::dom::element_type::UINT64) {
      out = value.get_uint64().value_unsafe();
    } else if (value.get_int64().get(signed_value) == simdjson::SUCCESS && signed_value >= 0 &&
               !(signed_value == 0 && source_.HasNegativeZero())) {
      out = static_cast<uint64_t>(signed_value);
    } else {
      return Problem(key, "expected unsigned integer");
    }
    return Status::Ok();
  }
  Result<object> Object(std::string_view key) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    object members;
    if (value.get_object().get(members) != simdjson::SUCCESS) {
      return Problem(key, "expected object");
    }
    return members;
  }
  Result<array> Array(std::string_view key) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    array items;
    if (value.get_array().get(items) != simdjson::SUCCESS) return Problem(key, "expected array");
    return items;
  }

 private:
  Result<element> Member(std::string_view key) const {
    const MemberList::Member* member = members_.Find(key);
    if (member == nullptr) return Problem(key, "missing");
    return member->value;
  }
  std::string PathOf(std::string_view key) const {
    std::string path(path_);
    if (index_) path += "[" + std::to_string(*index_) + "].";
    return path.append(key);
  }
  Status Problem(std::string_view key, std::string_view what) const {
    return Status::Malformed(PathOf(key) + ": " + std::string(what));
  }

  const SourceText& source_;
  MemberList members_;
  std::string_view path_;
  std::optional<size_t> index_;
};

Status ContextFromJson(const Fields& top, ReceiptContext& c) {
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("context"));
  const Fields r = top.Nested(members, "context.");
  WRIT_RETURN_IF_ERROR(r.OnlyKnown(kContextFields));
  WRIT_RETURN_IF_ERROR(r.String("operation", c.operation));
  WRIT_RETURN_IF_ERROR(r.String("transport", c.transport));
  WRIT_RETURN_IF_ERROR(r.String("provider", c.provider));
  WRIT_RETURN_IF_ERROR(r.String("device", c.device));
  WRIT_RETURN_IF_ERROR(r.String("memory_type", c.memory_type));
  WRIT_RETURN_IF_ERROR(r.String("software_release", c.software_release));
  WRIT_RETURN_IF_ERROR(r.String("completion_level", c.completion_level));
  // Required even when empty: the signed form always has it, and a receipt without it
  // would re-serialise to the signed bytes with a signed field gone.
  WRIT_ASSIGN_OR_RETURN(array notes, r.Array("notes"));
  size_t i = 0;
  for (element note : notes) {
    std::string_view text;
    if (note.get_string().get(text) != simdjson::SUCCESS) {
      return Status::Malformed("context.notes[" + std::to_string(i) + "]: expected string");
    }
    c.notes.emplace_back(text);
    ++i;
  }
  return Status::Ok();
}

Status DeliveryFromJson(const Fields& top, DeliveryRef& out) {
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("delivery"));
  const Fields d = top.Nested(members, "delivery.");
  WRIT_RETURN_IF_ERROR(d.OnlyKnown(kDeliveryFields));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("id", out.id));
  WRIT_RETURN_IF_ERROR(d.Unsigned("bytes", out.bytes));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("rule", out.rule));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("digest", out.digest));
  WRIT_RETURN_IF_ERROR(d.Unsigned("chunks", out.chunks));
  return d.Unsigned("chunk_size", out.chunk_size);
}

// Rung-specific fields: required on their rung, refused on any other.
Status RungFieldsFromJson(const Fields& top, Receipt& r) {
  auto only_on = [&](std::string_view key, ReceiptRung owner) -> Status {
    if (top.Has(key) && r.rung != owner) {
      return Status::Malformed(std::string(key) + ": not allowed on a " +
                               std::string(ReceiptRungName(r.rung)) + " receipt");
    }
    return Status::Ok();
  };
  WRIT_RETURN_IF_ERROR(only_on("rule", ReceiptRung::kValidated));
  WRIT_RETURN_IF_ERROR(only_on("step", ReceiptRung::kProcessed));
  for (std::string_view key :
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
Status GroupFromJson(const Fields& s, ReceiptSignature& out) {
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("root", out.root));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaf_index", out.leaf_index));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaves", out.leaves));
  WRIT_ASSIGN_OR_RETURN(array path, s.Array("path"));
  out.path.reserve(path.size());  // one allocation, not one per doubling
  size_t i = 0;
  for (element step : path) {
    object members;
    if (step.get_object().get(members) != simdjson::SUCCESS) {
      return Status::Malformed("signature.path[" + std::to_string(i) + "]: expected object");
    }
    const Fields r = s.Nested(members, "signature.path", i++);
    WRIT_RETURN_IF_ERROR(r.OnlyKnown(kPathStepFields));
    MerkleStep& parsed = out.path.emplace_back();
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("side", parsed.side));
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("hash", parsed.hash));
  }
  return Status::Ok();
}

Status SignatureFromJson(const Fields& top, Receipt& r) {
  if (!top.Has("signature")) return Status::Ok();
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("signature"));
  const Fields s = top.Nested(members, "signature.");
  WRIT_RETURN_IF_ERROR(s.OnlyKnown(kSignatureFields));
  ReceiptSignature& parsed = r.signature.emplace();
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("algorithm", parsed.algorithm));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("key_id", parsed.key_id));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("public_key", parsed.public_key));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("value", parsed.value));
  if (parsed.algorithm == receipt::kGroupSignatureAlgorithm) return GroupFromJson(s, parsed);
  for (std::string_view key : kGroupFields) {
    if (s.Has(key)) {
      return Status::Malformed("signature." + std::string(key) + ": only in the " +
                               std::string(receipt::kGroupSignatureAlgorithm) + " form");
    }
  }
  return Status::Ok();
}

Result<Receipt> ReceiptFromFields(const Fields& top) {
  WRIT_RETURN_IF_ERROR(top.OnlyKnown(kTopFields));
  Receipt r;
  std::string schema, rung;
  WRIT_RETURN_IF_ERROR(top.String("schema", schema));
  if (schema != kReceiptSchema)
    return Status::Malformed("schema: expected " + std::string(kReceiptSchema));
  WRIT_RETURN_IF_ERROR(top.String("rung", rung));
  auto parsed_rung = ParseReceiptRung(rung);
  if (!parsed_rung.ok()) return Status::Malformed(parsed_rung.status().message()).Annotate("rung");
  r.rung = *parsed_rung;
  WRIT_RETURN_IF_ERROR(DeliveryFromJson(top, r.delivery));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("observer", r.observer));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issuer", r.issuer));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issued_at", r.issued_at));
  WRIT_RETURN_IF_ERROR(ContextFromJson(top, r.context));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("statement", r.statement));
  WRIT_RETURN_IF_ERROR(top.String("does_not_establish", r.does_not_establish));
  WRIT_RETURN_IF_ERROR(RungFieldsFromJson(top, r));
  WRIT_RETURN_IF_ERROR(SignatureFromJson(top, r));
  if (top.Has("observed_chunks")) {
    WRIT_RETURN_IF_ERROR(top.Unsigned("observed_chunks", r.observed_chunks.emplace()));
  }
  if (top.Has("failure_domain")) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("failure_domain", r.failure_domain.emplace()));
  }
  return r;
}

}  // namespace

Result<Receipt> ReceiptFromJson(std::string_view text) {
  // A leading byte order mark or a NUL byte would let unread bytes ride along with a
  // receipt in a reader that skips or stops at them; both are refused by name.
  if (text.starts_with("\xEF\xBB\xBF")) {
    return Status::Malformed("receipt: starts with a byte order mark");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Status::Malformed("receipt: a NUL byte at offset " + std::to_string(nul) +
                             " (exactly one JSON document is read)");
  }
  // Reused, so that its buffers are allocated once per thread, not once per receipt. What
  // it returns is valid until its next parse, which nothing below starts.
  thread_local simdjson::dom::parser parser;
  element root;
  if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root) !=
      simdjson::SUCCESS) {
    return Status::Malformed("receipt: not valid JSON");
  }
  if (std::string duplicate; FindDuplicateKey(root, duplicate)) {
    return Status::Malformed(Printable(duplicate) + ": duplicate key");
  }
  object members;
  if (root.get_object().get(members) != simdjson::SUCCESS) {
    return Status::Malformed("receipt: expected a JSON object");
  }
  const SourceText source(text);
  return ReceiptFromFields(Fields(source, members, ""));
}

}  // namespace writ
