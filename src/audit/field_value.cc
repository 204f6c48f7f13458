#include "audit/field_value.h"

#include <limits>

namespace writ::audit::internal {

using Type = FieldValue::Type;

std::string ReadString(const FieldValue& v, std::string& out) {
  if (v.type != Type::kString) return "expected string";
  if (v.text->empty()) return "expected a non-empty string";
  out = std::move(*v.text);
  return "";
}

std::string ReadOptionalString(const FieldValue& v, std::optional<std::string>& out) {
  if (v.type == Type::kNull) return "";
  if (v.type != Type::kString) return "expected string or null";
  if (!v.text->empty()) out = std::move(*v.text);
  return "";
}

namespace {

constexpr std::string_view kOutOfRange = "integer out of range (beyond 2^64-1)";

}  // namespace

std::string ReadCount(const FieldValue& v, uint64_t& out) {
  if (v.type == Type::kUnsigned) {
    out = v.unsigned_value;
    return "";
  }
  if (v.type == Type::kInteger) {
    if (v.integer < 0) return "expected non-negative integer";
    out = static_cast<uint64_t>(v.integer);  // "-0"
    return "";
  }
  if (v.huge_integer) return std::string(kOutOfRange);
  return "expected integer";
}

std::string ReadOptionalCount(const FieldValue& v, std::optional<uint64_t>& out) {
  if (v.type == Type::kNull) return "";
  uint64_t n = 0;
  std::string error = ReadCount(v, n);
  if (error.empty()) out = n;
  return error;
}

std::string ReadOptionalInteger(const FieldValue& v, std::optional<int64_t>& out) {
  if (v.type == Type::kNull) return "";
  if (v.type == Type::kInteger) {
    out = v.integer;
    return "";
  }
  if (v.type == Type::kUnsigned) {
    if (v.unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return "integer out of range";
    out = static_cast<int64_t>(v.unsigned_value);
    return "";
  }
  if (v.huge_integer) return std::string(kOutOfRange);
  return "expected integer or null";
}

std::string ReadRequestId(const FieldValue& v, std::string& out) {
  if (v.type == Type::kString) return ReadString(v, out);
  uint64_t n = 0;
  if (v.huge_integer) return std::string(kOutOfRange);
  if (!ReadCount(v, n).empty()) return "expected string or non-negative integer";
  out = std::to_string(n);
  return "";
}

std::string ReadName(const FieldValue& v, const std::string_view* names, std::size_t count,
                     bool optional, std::optional<std::size_t>& index) {
  if (optional && v.type == Type::kNull) return "";
  if (v.type == Type::kString && (!v.text->empty() || !optional)) {
    for (std::size_t i = 0; i < count; ++i) {
      if (*v.text == names[i]) {
        index = i;
        return "";
      }
    }
  } else if (v.type == Type::kString) {
    return "";  // "" states nothing, like null
  }
  std::string expected = "expected one of ";
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) expected += (i + 1 == count) ? " or " : ", ";
    expected += names[i];
  }
  return optional ? expected + " or null" : expected;
}

}  // namespace writ::audit::internal
