// A retained delivery's lifecycle after its receipt: an optional time-to-live per
// retention class (the retained receipt then promises the delivery for at least that
// long, until a stated time), and removal -- by an operator (`writ store rm`,
// Receiver::Remove) or, once that time has passed, by the expiry sweep. Nothing is
// removed before a time its receipt promised unless the removal is forced, and then the
// log says the promise was broken (docs/retention.md, "Lifecycle").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "writ/status.h"
#include "writ/types.h"

namespace writ::store {

// Time-to-live per retention class; a class without one is held until removed.
using TtlPolicy = std::map<RetentionClass, std::chrono::milliseconds>;

// What a removal took out of a store.
struct Removal {
  std::string id;
  RetentionClass retention = RetentionClass::kVolatile;
  uint64_t bytes = 0;
  uint64_t held_until_ms = 0;   // what its receipt promised (Unix ms); 0: no time promised
  bool promise_broken = false;  // forced before held_until_ms
  std::string note;             // e.g. a payload unlink that failed after the row was dropped
};

// Wall-clock milliseconds since the Unix epoch: promised times outlive the process.
uint64_t NowUnixMs();
// "2026-12-01T10:05:00.000Z".
std::string UnixMsRfc3339(uint64_t unix_ms);
// "10m", "7d", "1500ms": the shortest exact spelling of `ttl`.
std::string TtlText(std::chrono::milliseconds ttl);
// "500ms", "10s", "10m", "2h", "7d"; a bare number is seconds. Longer than 0.
Result<std::chrono::milliseconds> ParseTtl(std::string_view text);
// "volatile=10m" -> (volatile, 10 min).
Result<std::pair<RetentionClass, std::chrono::milliseconds>> ParseClassTtl(std::string_view text);

// The removal's time check: Refused when `held_until_ms` is still ahead of `now_ms` and
// the removal is not forced; *broken tells a forced one that breaks the promise.
Status CheckRemovable(const std::string& id, uint64_t held_until_ms, uint64_t now_ms, bool force,
                      bool* broken);

// The one log line of a removal: id, class, bytes and why ("removed by writ store rm",
// "its time-to-live passed", ...), and a broken promise when there is one.
std::string RemovalLine(const Removal& removal, const std::string& why);

}  // namespace writ::store
