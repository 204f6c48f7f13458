#include <chrono>
#include <cstdio>
#include <ctime>

#include "receipt/canonical_json.h"
#include "writ/receipt.h"

namespace writ {

std::string ReceiptToJson(const Receipt& r) {
  std::string out;
  receipt::AppendReceiptJson(out, r);
  return out;
}

std::string NowRfc3339() {
  std::string out;
  receipt::AssignNowRfc3339(out);
  return out;
}

void receipt::AssignNowRfc3339(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char text[48];
  const int n = std::snprintf(text, sizeof text, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  out.assign(text, static_cast<size_t>(n));
}

}  // namespace writ
