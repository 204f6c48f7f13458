#include "protocol/text.h"

#include <cstdint>

namespace writ::protocol {
namespace {

constexpr uint32_t kInvalid = 0xffffffff;

// Decodes the UTF-8 sequence at `i` and advances past it.
uint32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  size_t extra = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((b0 & 0xe0) == 0xc0) {
    extra = 1;
    cp = b0 & 0x1f;
    min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    extra = 2;
    cp = b0 & 0x0f;
    min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    extra = 3;
    cp = b0 & 0x07;
    min = 0x10000;
  } else {
    return kInvalid;
  }
  if (s.size() - i - 1 < extra) return kInvalid;
  for (size_t k = 1; k <= extra; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xc0) != 0x80) return kInvalid;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return kInvalid;
  i += extra + 1;
  return cp;
}

}  // namespace

TextProblem FindTextProblem(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t at = i;
    const uint32_t cp = NextCodePoint(text, i);
    if (cp == kInvalid) return {TextProblem::kInvalidUtf8, at};
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return {TextProblem::kControl, at};
  }
  return {};
}

}  // namespace writ::protocol
