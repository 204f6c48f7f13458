#include "store/lifecycle.h"

#include <cstdio>
#include <ctime>

#include "writ/vocabulary.h"

namespace writ::store {

uint64_t NowUnixMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string UnixMsRfc3339(uint64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03uZ", static_cast<unsigned>(unix_ms % 1000));
  return buf;
}

namespace {

struct Unit {
  const char* name;
  uint64_t ms;
};
constexpr Unit kUnits[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

}  // namespace

std::string TtlText(std::chrono::milliseconds ttl) {
  const uint64_t ms = static_cast<uint64_t>(ttl.count());
  for (const Unit& u : kUnits) {
    if (ms % u.ms == 0) return std::to_string(ms / u.ms) + u.name;
  }
  return std::to_string(ms) + "ms";
}

Result<std::chrono::milliseconds> ParseTtl(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  uint64_t per = unit.empty() ? 1000 : 0;
  for (const Unit& u : kUnits) {
    if (unit == u.name) per = u.ms;
  }
  if (digits == 0 || digits > 9 || per == 0) {
    return Status::InvalidArgument("expected a time-to-live such as 90s, 10m, 12h or 7d, got '" +
                                   std::string(text) + "'");
  }
  const uint64_t n = std::stoull(std::string(text.substr(0, digits)));
  if (n == 0) return Status::InvalidArgument("a time-to-live must be longer than 0");
  return std::chrono::milliseconds(n * per);
}

Result<std::pair<RetentionClass, std::chrono::milliseconds>> ParseClassTtl(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument("expected CLASS=DURATION (e.g. volatile=10m), got '" +
                                   std::string(text) + "'");
  }
  auto retention = writ::ParseRetention(text.substr(0, eq));
  if (!retention.ok()) return retention.status();
  WRIT_ASSIGN_OR_RETURN(auto ttl, ParseTtl(text.substr(eq + 1)));
  return std::make_pair(*retention, ttl);
}

Status CheckRemovable(const std::string& id, uint64_t held_until_ms, uint64_t now_ms, bool force,
                      bool* broken) {
  *broken = held_until_ms != 0 && now_ms < held_until_ms;
  if (*broken && !force) {
    return Status::Refused("delivery " + id +
                           " is not removed: its retained receipt promises it is held until " +
                           UnixMsRfc3339(held_until_ms) +
                           " (its time-to-live); removing it earlier breaks that promise "
                           "(--force does)");
  }
  return Status::Ok();
}

std::string RemovalLine(const Removal& removal, const std::string& why) {
  std::string line = "store: removed delivery " + removal.id + " (" +
                     std::string(writ::RetentionName(removal.retention)) + ", " +
                     std::to_string(removal.bytes) + " bytes): " + why;
  if (removal.promise_broken) {
    line += "; PROMISE BROKEN: its retained receipt promised it until " +
            UnixMsRfc3339(removal.held_until_ms);
  }
  if (!removal.note.empty()) line += "; " + removal.note;
  return line;
}

}  // namespace writ::store
