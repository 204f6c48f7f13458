// What a test needs from the machine (a provider, root, FUSE, a tmpfs mount). Where the
// CI machine is expected to have it, its absence is a failure, not a skip: a fault test
// that skipped there would pass silently. WRIT_ALLOW_MISSING=1 turns such failures back
// into skips (for a developer machine without root or FUSE); the skip says why.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace writ::testing {

inline bool MissingAllowed() {
  const char* v = std::getenv("WRIT_ALLOW_MISSING");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace writ::testing

// REQUIRE_OR_FAIL(cond, why): fails the test (or, with WRIT_ALLOW_MISSING=1, skips it)
// when `cond` is false, with `why` (streamable) in the message.
#define REQUIRE_OR_FAIL(cond, why)                                                 \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      if (::writ::testing::MissingAllowed()) {                                     \
        GTEST_SKIP() << why << " (skipped: WRIT_ALLOW_MISSING=1)";                 \
      }                                                                            \
      FAIL() << why                                                                \
             << " (this machine is expected to have it; set WRIT_ALLOW_MISSING=1 " \
                "to skip instead)";                                                \
    }                                                                              \
  } while (0)
