// Byte sizes the tests spell out, defined once: test executables are unity-built, so two
// files of one executable may not each define them.
#pragma once

#include <cstdint>

namespace writ::testing {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;

}  // namespace writ::testing
