// Deterministic, position-dependent content for demos, tests and benchmarks:
// every 8-byte word differs from its neighbours and from the same offset in
// another stream, so a misplaced or repeated chunk is always visible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace writ {

inline uint64_t PatternWord(uint64_t stream, uint64_t word_index) {
  uint64_t x = word_index * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

// Fills `out` with the pattern bytes [offset, offset + length) of `stream`.
inline void FillPattern(uint64_t stream, uint64_t offset, uint8_t* out, size_t length) {
  for (size_t i = 0; i < length;) {
    const uint64_t abs = offset + i;
    const uint64_t word = PatternWord(stream, abs / 8);
    const size_t in_word = abs % 8;
    const size_t n = (length - i < 8 - in_word) ? length - i : 8 - in_word;
    std::memcpy(out + i, reinterpret_cast<const uint8_t*>(&word) + in_word, n);
    i += n;
  }
}

// Index of the first byte of `data` that differs from the pattern, or `length`.
inline size_t FirstPatternMismatch(uint64_t stream, uint64_t offset, const uint8_t* data,
                                   size_t length) {
  uint8_t expected[4096];
  for (size_t done = 0; done < length;) {
    const size_t n = length - done < sizeof expected ? length - done : sizeof expected;
    FillPattern(stream, offset + done, expected, n);
    if (std::memcmp(expected, data + done, n) != 0) {
      for (size_t k = 0; k < n; ++k) {
        if (expected[k] != data[done + k]) return done + k;
      }
    }
    done += n;
  }
  return length;
}

}  // namespace writ
