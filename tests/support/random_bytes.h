// The one random-bytes helper of the tests: the same seed gives the same bytes, so a
// failure can be replayed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace writ::testing {

inline std::vector<uint8_t> RandomBytes(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t word = rng();
    for (size_t b = 0; b < 8; ++b) out[i + b] = static_cast<uint8_t>(word >> (8 * b));
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

}  // namespace writ::testing
