// Small helpers for the report's sentences.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace writ::audit::internal {

// 25165824 → "25,165,824".
std::string Grouped(uint64_t n);

// "1 portion", "3 portions".
std::string Counted(uint64_t n, std::string_view singular, std::string_view plural);

// `"text"`, for naming a supplier's id or words inside a sentence.
std::string Quoted(std::string_view text);

// "a", "a and b", "a, b and c", "a, b, c and 7 more" (`total` counts all of them,
// `shown` holds at most the first few).
std::string Listed(const std::vector<std::string>& shown, uint64_t total);

// The one question a failed validation asks (rule 12), for the delivery and its claims alike.
inline std::string FailedValidationQuestion(const std::string& quoted_id) {
  return "Delivery " + quoted_id +
         " failed validation: was it sent again, and where is the acknowledgement of that "
         "attempt?";
}

// How many items Listed() names before "and N more".
inline constexpr std::size_t kListedMax = 3;

}  // namespace writ::audit::internal
