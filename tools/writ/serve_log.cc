#include "serve_log.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/printable.h"

namespace writ::cli {
namespace {

const char* LevelName(LogEvent::Level level) {
  switch (level) {
    case LogEvent::Level::kInfo: return "info";
    case LogEvent::Level::kWarning: return "warning";
    case LogEvent::Level::kError: return "error";
    case LogEvent::Level::kDebug: return "debug";
  }
  return "info";
}

// "2026-12-01T09:56:24.123Z"
std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms));
  return text;
}

}  // namespace

std::string ServeLog::Format(const LogEvent& event) const {
  if (!json_) return "writ: " + Printable(event.message) + "\n";
  nlohmann::json line{{"ts", Timestamp()},
                      {"level", LevelName(event.level)},
                      {"event", event.event},
                      {"message", event.message}};
  for (const LogField& field : event.fields) {
    std::visit([&](const auto& value) { line[field.name] = value; }, field.value);
  }
  // Ids and details come from peers: bytes that are not UTF-8 are replaced, never thrown on.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void ServeLog::Emit(const LogEvent& event) {
  if (quiet_ && event.level == LogEvent::Level::kInfo) return;
  if (!verbose_ && event.level == LogEvent::Level::kDebug) return;
  Write(STDERR_FILENO, Format(event));
}

void ServeLog::Ready(const std::string& event, const std::string& message,
                     std::vector<LogField> fields) {
  Write(STDOUT_FILENO, Format(LogEvent{LogEvent::Level::kInfo, event, message, std::move(fields)}));
}

void ServeLog::Write(int fd, const std::string& line) {
  MutexLock lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace writ::cli
