// One JSON value as the streaming reader sees it, and the contract's typed
// reads of it. A read returns "" or what was wrong ("expected integer"); the
// caller puts the field's path in front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace writ::audit::internal {

struct FieldValue {
  enum class Type { kNull, kBool, kInteger, kUnsigned, kFloat, kString, kObject, kArray };
  Type type = Type::kNull;
  int64_t integer = 0;          // kInteger (negative or "-0")
  uint64_t unsigned_value = 0;  // kUnsigned
  std::string* text = nullptr;  // kString; may be moved from
  bool huge_integer = false;    // kFloat written as an integer: beyond 64 bits
};

// A non-empty string.
std::string ReadString(const FieldValue& v, std::string& out);
// Null, absent and "" are all "not stated".
std::string ReadOptionalString(const FieldValue& v, std::optional<std::string>& out);
// An integer ≥ 0; one written past 2^64-1 is "out of range".
std::string ReadCount(const FieldValue& v, uint64_t& out);
std::string ReadOptionalCount(const FieldValue& v, std::optional<uint64_t>& out);
std::string ReadOptionalInteger(const FieldValue& v, std::optional<int64_t>& out);
// A work request id: a non-empty string, or an integer ≥ 0 read as its decimal string.
std::string ReadRequestId(const FieldValue& v, std::string& out);

// One of `names` (wire names indexed by enumerator), or null when `optional`.
std::string ReadName(const FieldValue& v, const std::string_view* names, std::size_t count,
                     bool optional, std::optional<std::size_t>& index);

}  // namespace writ::audit::internal
