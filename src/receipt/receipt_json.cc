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
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
}

}  // namespace writ
