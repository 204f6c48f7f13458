#include "audit/sentences.h"

namespace writ::audit::internal {

std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Counted(uint64_t n, std::string_view singular, std::string_view plural) {
  return Grouped(n) + " " + std::string(n == 1 ? singular : plural);
}

// Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive, GCC bug
// 105329) on `"\"" + std::string(text)`.
std::string Quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  out += text;
  out += '"';
  return out;
}

std::string Listed(const std::vector<std::string>& shown, uint64_t total) {
  std::string out;
  const uint64_t rest = total > shown.size() ? total - shown.size() : 0;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (i > 0) out += (i + 1 == shown.size() && rest == 0) ? " and " : ", ";
    out += shown[i];
  }
  if (rest > 0) out += " and " + Grouped(rest) + " more";
  return out;
}

}  // namespace writ::audit::internal
