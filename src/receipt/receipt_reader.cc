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
  // No key twice, then no key the signed form does not have. Every object of a receipt that
  // is accepted is read through here (any other object is an unknown field or a wrong
  // type), so the duplicate check covers the whole document without a walk of its own.
  Status OnlyKnown(std::span<const std::string_view> known) const {
    WRIT_RETURN_IF_ERROR(NoDuplicateKey());
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

  // The string's view into the parser's buffer (valid until the thread's next parse).
  Result<std::string_view> View(std::string_view key) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return Problem(key, "expected string");
    return text;
  }
  Result<std::string_view> NonEmptyView(std::string_view key) const {
    WRIT_ASSIGN_OR_RETURN(std::string_view text, View(key));
    if (text.empty()) return Problem(key, "empty");
    return text;
  }
  // Checked, and copied into `out` unless it is null (a check-only reading).
  Status String(std::string_view key, std::string* out) const {
    WRIT_ASSIGN_OR_RETURN(std::string_view text, View(key));
    if (out != nullptr) out->assign(text);
    return Status::Ok();
  }
  Status NonEmptyString(std::string_view key, std::string* out) const {
    WRIT_ASSIGN_OR_RETURN(std::string_view text, NonEmptyView(key));
    if (out != nullptr) out->assign(text);
    return Status::Ok();
  }
  // A JSON integer written without a sign, as nlohmann's "unsigned" reads it.
  Status Unsigned(std::string_view key, uint64_t* out) const {
    WRIT_ASSIGN_OR_RETURN(element value, Member(key));
    int64_t signed_value = 0;
    uint64_t read = 0;
    if (value.type() == simdjson::dom::element_type::UINT64) {
      read = value.get_uint64().value_unsafe();
    } else if (value.get_int64().get(signed_value) == simdjson::SUCCESS && signed_value >= 0 &&
               !(signed_value == 0 && source_.HasNegativeZero())) {
      read = static_cast<uint64_t>(signed_value);
    } else {
      return Problem(key, "expected unsigned integer");
    }
    if (out != nullptr) *out = read;
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
  // A key twice in one object: a reader keeping either copy would show something other
  // than what was signed. Document order decides which is named.
  Status NoDuplicateKey() const {
    for (size_t index = 1; index < members_.size(); ++index) {
      const std::string_view key = members_[index].key;
      for (size_t earlier = 0; earlier < index; ++earlier) {
        if (members_[earlier].key == key) {
          return Status::Malformed(Printable(PathOf(key)) + ": duplicate key");
        }
      }
    }
    return Status::Ok();
  }
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

// Each reader below copies into its destination when that is not null; with null it checks
// exactly the same things and copies nothing (ReadReceiptFacts), so that reading and
// checking accept exactly the same texts.
template <typename Owner, typename Field>
Field* Into(Owner* owner, Field Owner::*field) {
  return owner != nullptr ? &(owner->*field) : nullptr;
}

Status ContextFromJson(const Fields& top, ReceiptContext* c) {
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("context"));
  const Fields r = top.Nested(members, "context.");
  WRIT_RETURN_IF_ERROR(r.OnlyKnown(kContextFields));
  WRIT_RETURN_IF_ERROR(r.String("operation", Into(c, &ReceiptContext::operation)));
  WRIT_RETURN_IF_ERROR(r.String("transport", Into(c, &ReceiptContext::transport)));
  WRIT_RETURN_IF_ERROR(r.String("provider", Into(c, &ReceiptContext::provider)));
  WRIT_RETURN_IF_ERROR(r.String("device", Into(c, &ReceiptContext::device)));
  WRIT_RETURN_IF_ERROR(r.String("memory_type", Into(c, &ReceiptContext::memory_type)));
  WRIT_RETURN_IF_ERROR(r.String("software_release", Into(c, &ReceiptContext::software_release)));
  WRIT_RETURN_IF_ERROR(r.String("completion_level", Into(c, &ReceiptContext::completion_level)));
  // Required even when empty: the signed form always has it, and a receipt without it
  // would re-serialise to the signed bytes with a signed field gone.
  WRIT_ASSIGN_OR_RETURN(array notes, r.Array("notes"));
  size_t i = 0;
  for (element note : notes) {
    std::string_view text;
    if (note.get_string().get(text) != simdjson::SUCCESS) {
      return Status::Malformed("context.notes[" + std::to_string(i) + "]: expected string");
    }
    if (c != nullptr) c->notes.emplace_back(text);
    ++i;
  }
  return Status::Ok();
}

Status DeliveryFromJson(const Fields& top, DeliveryRef* out, ReceiptFacts& facts) {
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("delivery"));
  const Fields d = top.Nested(members, "delivery.");
  WRIT_RETURN_IF_ERROR(d.OnlyKnown(kDeliveryFields));
  WRIT_ASSIGN_OR_RETURN(facts.delivery_id, d.NonEmptyView("id"));
  WRIT_RETURN_IF_ERROR(d.Unsigned("bytes", &facts.bytes));
  WRIT_RETURN_IF_ERROR(d.NonEmptyString("rule", Into(out, &DeliveryRef::rule)));
  WRIT_ASSIGN_OR_RETURN(facts.digest, d.NonEmptyView("digest"));
  WRIT_RETURN_IF_ERROR(d.Unsigned("chunks", Into(out, &DeliveryRef::chunks)));
  WRIT_RETURN_IF_ERROR(d.Unsigned("chunk_size", Into(out, &DeliveryRef::chunk_size)));
  if (out != nullptr) {
    out->id.assign(facts.delivery_id);
    out->bytes = facts.bytes;
    out->digest.assign(facts.digest);
  }
  return Status::Ok();
}

// Rung-specific fields: required on their rung, refused on any other.
Status RungFieldsFromJson(const Fields& top, Receipt* r, ReceiptFacts& facts) {
  const ReceiptRung rung = facts.rung;
  auto only_on = [&](std::string_view key, ReceiptRung owner) -> Status {
    if (top.Has(key) && rung != owner) {
      return Status::Malformed(std::string(key) + ": not allowed on a " +
                               std::string(ReceiptRungName(rung)) + " receipt");
    }
    return Status::Ok();
  };
  WRIT_RETURN_IF_ERROR(only_on("rule", ReceiptRung::kValidated));
  WRIT_RETURN_IF_ERROR(only_on("step", ReceiptRung::kProcessed));
  for (std::string_view key :
       {"retention", "acknowledged_point", "survives", "promise_after_failure", "evidence"}) {
    WRIT_RETURN_IF_ERROR(only_on(key, ReceiptRung::kRetained));
  }
  if (rung == ReceiptRung::kValidated) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("rule", r ? &r->rule_passed.emplace() : nullptr));
  }
  if (rung == ReceiptRung::kProcessed) {
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("step", r ? &r->processing_step.emplace() : nullptr));
  }
  if (rung == ReceiptRung::kRetained) {
    RetentionPromise* p = r ? &r->retention.emplace() : nullptr;
    WRIT_ASSIGN_OR_RETURN(facts.retention, top.NonEmptyView("retention"));
    if (p != nullptr) p->retention.assign(facts.retention);
    WRIT_RETURN_IF_ERROR(
        top.NonEmptyString("acknowledged_point", Into(p, &RetentionPromise::acknowledged_point)));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("survives", Into(p, &RetentionPromise::survives)));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("promise_after_failure",
                                            Into(p, &RetentionPromise::promise_after_failure)));
    WRIT_RETURN_IF_ERROR(top.NonEmptyString("evidence", Into(p, &RetentionPromise::evidence)));
  }
  return Status::Ok();
}

// The group form's inclusion proof (merkle.h); each field required.
Status GroupFromJson(const Fields& s, ReceiptSignature* out) {
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("root", Into(out, &ReceiptSignature::root)));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaf_index", Into(out, &ReceiptSignature::leaf_index)));
  WRIT_RETURN_IF_ERROR(s.Unsigned("leaves", Into(out, &ReceiptSignature::leaves)));
  WRIT_ASSIGN_OR_RETURN(array path, s.Array("path"));
  if (out != nullptr) out->path.reserve(path.size());  // one allocation, not one per doubling
  size_t i = 0;
  for (element step : path) {
    object members;
    if (step.get_object().get(members) != simdjson::SUCCESS) {
      return Status::Malformed("signature.path[" + std::to_string(i) + "]: expected object");
    }
    const Fields r = s.Nested(members, "signature.path", i++);
    WRIT_RETURN_IF_ERROR(r.OnlyKnown(kPathStepFields));
    MerkleStep* parsed = out != nullptr ? &out->path.emplace_back() : nullptr;
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("side", Into(parsed, &MerkleStep::side)));
    WRIT_RETURN_IF_ERROR(r.NonEmptyString("hash", Into(parsed, &MerkleStep::hash)));
  }
  return Status::Ok();
}

Status SignatureFromJson(const Fields& top, Receipt* r) {
  if (!top.Has("signature")) return Status::Ok();
  WRIT_ASSIGN_OR_RETURN(object members, top.Object("signature"));
  const Fields s = top.Nested(members, "signature.");
  WRIT_RETURN_IF_ERROR(s.OnlyKnown(kSignatureFields));
  ReceiptSignature* parsed = r != nullptr ? &r->signature.emplace() : nullptr;
  WRIT_ASSIGN_OR_RETURN(std::string_view algorithm, s.NonEmptyView("algorithm"));
  if (parsed != nullptr) parsed->algorithm.assign(algorithm);
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("key_id", Into(parsed, &ReceiptSignature::key_id)));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("public_key", Into(parsed, &ReceiptSignature::public_key)));
  WRIT_RETURN_IF_ERROR(s.NonEmptyString("value", Into(parsed, &ReceiptSignature::value)));
  if (algorithm == receipt::kGroupSignatureAlgorithm) return GroupFromJson(s, parsed);
  for (std::string_view key : kGroupFields) {
    if (s.Has(key)) {
      return Status::Malformed("signature." + std::string(key) + ": only in the " +
                               std::string(receipt::kGroupSignatureAlgorithm) + " form");
    }
  }
  return Status::Ok();
}

// The whole receipt: into `r` when it is not null; `facts` in either case.
Status ReceiptFromFields(const Fields& top, Receipt* r, ReceiptFacts& facts) {
  WRIT_RETURN_IF_ERROR(top.OnlyKnown(kTopFields));
  WRIT_ASSIGN_OR_RETURN(std::string_view schema, top.View("schema"));
  if (schema != kReceiptSchema)
    return Status::Malformed("schema: expected " + std::string(kReceiptSchema));
  WRIT_ASSIGN_OR_RETURN(std::string_view rung, top.View("rung"));
  auto parsed_rung = ParseReceiptRung(rung);
  if (!parsed_rung.ok()) return Status::Malformed(parsed_rung.status().message()).Annotate("rung");
  facts.rung = *parsed_rung;
  if (r != nullptr) r->rung = facts.rung;
  WRIT_RETURN_IF_ERROR(DeliveryFromJson(top, Into(r, &Receipt::delivery), facts));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("observer", Into(r, &Receipt::observer)));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issuer", Into(r, &Receipt::issuer)));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("issued_at", Into(r, &Receipt::issued_at)));
  WRIT_RETURN_IF_ERROR(ContextFromJson(top, Into(r, &Receipt::context)));
  WRIT_RETURN_IF_ERROR(top.NonEmptyString("statement", Into(r, &Receipt::statement)));
  WRIT_RETURN_IF_ERROR(top.String("does_not_establish", Into(r, &Receipt::does_not_establish)));
  WRIT_RETURN_IF_ERROR(RungFieldsFromJson(top, r, facts));
  WRIT_RETURN_IF_ERROR(SignatureFromJson(top, r));
  if (top.Has("observed_chunks")) {
    WRIT_RETURN_IF_ERROR(
        top.Unsigned("observed_chunks", r ? &r->observed_chunks.emplace() : nullptr));
  }
  if (top.Has("failure_domain")) {
    WRIT_RETURN_IF_ERROR(
        top.NonEmptyString("failure_domain", r ? &r->failure_domain.emplace() : nullptr));
  }
  return Status::Ok();
}

// Parses `text` with this thread's parser and reads it through ReceiptFromFields.
Status ReadReceipt(std::string_view text, Receipt* r, ReceiptFacts& facts) {
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
  object members;
  if (root.get_object().get(members) != simdjson::SUCCESS) {
    return Status::Malformed("receipt: expected a JSON object");
  }
  const SourceText source(text);
  return ReceiptFromFields(Fields(source, members, ""), r, facts);
}

}  // namespace

Result<Receipt> ReceiptFromJson(std::string_view text) {
  Receipt r;
  ReceiptFacts facts;
  WRIT_RETURN_IF_ERROR(ReadReceipt(text, &r, facts));
  return r;
}

Result<ReceiptFacts> ReadReceiptFacts(std::string_view text) {
  ReceiptFacts facts;
  WRIT_RETURN_IF_ERROR(ReadReceipt(text, nullptr, facts));
  return facts;
}

}  // namespace writ
