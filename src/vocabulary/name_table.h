// A fixed table of an enum's values and their names, with the lookups every
// vocabulary uses: the public one (writ/vocabulary.h) and the wire's own enums.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "common/printable.h"
#include "writ/status.h"

namespace writ::vocabulary {

template <typename Enum, size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

template <typename Enum, size_t N>
std::string_view NameIn(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <typename Enum, size_t N>
bool KnownIn(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& entry : table) {
    if (entry.first == value) return true;
  }
  return false;
}

// "unknown digest rule \"md5\" (known: xxh3-128, crc32c, sha256)"
template <typename Enum, size_t N>
Result<Enum> ParseIn(const NameTable<Enum, N>& table, std::string_view what,
                     std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  std::string known;
  for (const auto& entry : table) {
    if (!known.empty()) known += ", ";
    known += entry.second;
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " \"" + Printable(name) +
                                 "\" (known: " + known + ")");
}

}  // namespace writ::vocabulary
