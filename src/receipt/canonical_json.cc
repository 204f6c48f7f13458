#include "receipt/canonical_json.h"

#include <charconv>
#include <cstring>

#include "common/printable.h"
#include "receipt/merkle.h"

namespace writ::receipt {
namespace {

void AppendUnsigned(std::string& out, uint64_t value) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
  out.append(buf, end);
}

// `"key":` for a key that needs no escaping; `first` false puts a comma before it.
void Key(std::string& out, std::string_view key, bool first = false) {
  if (!first) out += ',';
  out += '"';
  out += key;
  out += "\":";
}

void StringMember(std::string& out, std::string_view key, std::string_view value,
                  bool first = false) {
  Key(out, key, first);
  AppendJsonString(out, value);
}

void UnsignedMember(std::string& out, std::string_view key, uint64_t value, bool first = false) {
  Key(out, key, first);
  AppendUnsigned(out, value);
}

void AppendEscapedControl(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '\b': out += "\\b"; return;
    case '\t': out += "\\t"; return;
    case '\n': out += "\\n"; return;
    case '\f': out += "\\f"; return;
    case '\r': out += "\\r"; return;
    default: break;
  }
  const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
  out.append(escaped, sizeof escaped);
}

void AppendContext(std::string& out, const ReceiptContext& c) {
  out += '{';
  StringMember(out, "completion_level", c.completion_level, true);
  StringMember(out, "device", c.device);
  StringMember(out, "memory_type", c.memory_type);
  Key(out, "notes");
  out += '[';
  for (size_t i = 0; i < c.notes.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, c.notes[i]);
  }
  out += ']';
  StringMember(out, "operation", c.operation);
  StringMember(out, "provider", c.provider);
  StringMember(out, "software_release", c.software_release);
  StringMember(out, "transport", c.transport);
  out += '}';
}

void AppendDelivery(std::string& out, const DeliveryRef& d) {
  out += '{';
  UnsignedMember(out, "bytes", d.bytes, true);
  UnsignedMember(out, "chunk_size", d.chunk_size);
  UnsignedMember(out, "chunks", d.chunks);
  StringMember(out, "digest", d.digest);
  StringMember(out, "id", d.id);
  StringMember(out, "rule", d.rule);
  out += '}';
}

// "{" up to and including `"schema":...,`: every member that sorts before "signature".
void AppendMembersBeforeSignature(std::string& out, const Receipt& r) {
  out += '{';
  bool first = true;
  if (r.retention) {
    StringMember(out, "acknowledged_point", r.retention->acknowledged_point, first);
    first = false;
  }
  Key(out, "context", first);
  AppendContext(out, r.context);
  Key(out, "delivery");
  AppendDelivery(out, r.delivery);
  StringMember(out, "does_not_establish", r.does_not_establish);
  if (r.retention) StringMember(out, "evidence", r.retention->evidence);
  if (r.failure_domain) StringMember(out, "failure_domain", *r.failure_domain);
  StringMember(out, "issued_at", r.issued_at);
  StringMember(out, "issuer", r.issuer);
  if (r.observed_chunks) UnsignedMember(out, "observed_chunks", *r.observed_chunks);
  StringMember(out, "observer", r.observer);
  if (r.retention) {
    StringMember(out, "promise_after_failure", r.retention->promise_after_failure);
    StringMember(out, "retention", r.retention->retention);
  }
  if (r.rule_passed) StringMember(out, "rule", *r.rule_passed);
  StringMember(out, "rung", ReceiptRungName(r.rung));
  StringMember(out, "schema", kReceiptSchema);
  out += ',';
}

// From "statement" (which every receipt has, and which sorts just after "signature") to "}".
void AppendMembersAfterSignature(std::string& out, const Receipt& r) {
  StringMember(out, "statement", r.statement, true);
  if (r.processing_step) StringMember(out, "step", *r.processing_step);
  if (r.retention) StringMember(out, "survives", r.retention->survives);
  out += '}';
}

}  // namespace

namespace {

// Whether none of eight bytes needs more than copying into a JSON string: each is printable
// ASCII (0x20..0x7f) and neither '"' nor '\\'. Receipts are long runs of such bytes
// (sentences, hex), so the writer skips them a word at a time; the tests are exact.
bool EightPlainBytes(const char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  const auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return ((w & kHighs) | below_space | has_zero(w ^ (kOnes * '"')) |
          has_zero(w ^ (kOnes * '\\'))) == 0;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  size_t plain = 0;  // start of the run of bytes copied as they are
  for (size_t i = 0; i < text.size();) {
    if (i + 8 <= text.size() && EightPlainBytes(text.data() + i)) {
      i += 8;
      continue;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 1;
    uint32_t cp = 0;
    if (c >= 0x80) {
      length = printable_internal::DecodeUtf8(text, i, cp);
      if (length > 0) {
        i += length;
        continue;
      }
      length = 1;
    }
    out.append(text.data() + plain, i - plain);
    if (c >= 0x80) {
      out += "\xef\xbf\xbd";  // U+FFFD for the byte that is not UTF-8
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      AppendEscapedControl(out, c);
    }
    i += length;
    plain = i;
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

void AppendUnsignedReceiptJson(std::string& out, const Receipt& r, size_t* signature_at) {
  AppendMembersBeforeSignature(out, r);
  if (signature_at != nullptr) *signature_at = out.size();
  AppendMembersAfterSignature(out, r);
}

namespace {

template <typename PathWriter>
void SignatureMember(std::string& out, const ReceiptSignature& s, uint64_t leaf_index,
                     const PathWriter& append_path) {
  Key(out, "signature", true);
  out += '{';
  StringMember(out, "algorithm", s.algorithm, true);
  StringMember(out, "key_id", s.key_id);
  const bool group = s.algorithm == kGroupSignatureAlgorithm;
  if (group) {
    UnsignedMember(out, "leaf_index", leaf_index);
    UnsignedMember(out, "leaves", s.leaves);
    Key(out, "path");
    out += '[';
    append_path(out);
    out += ']';
  }
  StringMember(out, "public_key", s.public_key);
  if (group) StringMember(out, "root", s.root);
  StringMember(out, "value", s.value);
  out += '}';
}

}  // namespace

void AppendPathStep(std::string& out, bool first, std::string_view side, std::string_view hash) {
  out += first ? "{" : ",{";
  StringMember(out, "hash", hash, true);
  StringMember(out, "side", side);
  out += '}';
}

void AppendSignatureMember(std::string& out, const ReceiptSignature& s) {
  SignatureMember(out, s, s.leaf_index, [&s](std::string& o) {
    for (size_t i = 0; i < s.path.size(); ++i) {
      AppendPathStep(o, i == 0, s.path[i].side, s.path[i].hash);
    }
  });
}

void AppendGroupSignatureMember(std::string& out, const ReceiptSignature& group,
                                uint64_t leaf_index,
                                const std::function<void(std::string&)>& append_path) {
  SignatureMember(out, group, leaf_index, append_path);
}

void AppendReceiptJson(std::string& out, const Receipt& receipt) {
  AppendMembersBeforeSignature(out, receipt);
  if (receipt.signature) {
    AppendSignatureMember(out, *receipt.signature);
    out += ',';
  }
  AppendMembersAfterSignature(out, receipt);
}

}  // namespace writ::receipt
