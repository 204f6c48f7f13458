#include "fabric/memory_region.h"

#include <charconv>
#include <cstdio>

namespace writ::fabric {
namespace {

Result<uint64_t> ParseHex(std::string_view text, const char* field) {
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return Status::Malformed(std::string("region descriptor ") + field + ": not a hex number");
  }
  return value;
}

}  // namespace

std::string RegionDescriptor::Encode() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llx:%llx:%llx", static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(key), static_cast<unsigned long long>(length));
  return buf;
}

Result<RegionDescriptor> RegionDescriptor::Decode(std::string_view text) {
  const size_t a = text.find(':');
  const size_t b = a == std::string_view::npos ? a : text.find(':', a + 1);
  if (b == std::string_view::npos) {
    return Status::Malformed("region descriptor: expected base:key:length");
  }
  RegionDescriptor d;
  WRIT_ASSIGN_OR_RETURN(d.base, ParseHex(text.substr(0, a), "base"));
  WRIT_ASSIGN_OR_RETURN(d.key, ParseHex(text.substr(a + 1, b - a - 1), "key"));
  WRIT_ASSIGN_OR_RETURN(d.length, ParseHex(text.substr(b + 1), "length"));
  return d;
}

}  // namespace writ::fabric
