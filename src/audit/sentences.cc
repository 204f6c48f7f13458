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

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

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
