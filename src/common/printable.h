// Text from a peer, a receipt file or a data directory, made safe for a terminal: what a
// human reads must not be able to move the cursor, clear the screen, reorder the line or
// forge another line of output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace writ {
namespace printable_internal {

inline void AppendHex(std::string& out, const char* prefix, uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  out += buf;
}

// Length of the valid UTF-8 sequence at `text[i]` (a lead byte >= 0x80) and its code
// point; 0 when it is not valid UTF-8 (overlong, surrogate, above U+10FFFF, truncated).
inline size_t DecodeUtf8(std::string_view text, size_t i, uint32_t& cp) {
  const auto b = static_cast<uint8_t>(text[i]);
  size_t n = 0;
  uint32_t min = 0;
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2, min = 0x80, cp = b & 0x1f;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3, min = 0x800, cp = b & 0x0f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4, min = 0x10000, cp = b & 0x07;
  } else {
    return 0;
  }
  if (text.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<uint8_t>(text[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// C1 controls, line/paragraph separators and the bidirectional overrides and isolates
// (which reorder what follows them on the line).
inline bool IsInvisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e ||
         cp == 0x200f || cp == 0x061c;
}

}  // namespace printable_internal

// `text` as a human may see it: printable ASCII and valid, visible UTF-8 unchanged;
// backslash as `\\`; `\n`, `\r`, `\t` as those two characters; every other C0 control,
// DEL and every byte that is not valid UTF-8 as `\xNN`; C1 controls, U+2028/2029 and
// bidirectional controls as `\u{NNNN}`. The result holds no control character, so it
// cannot move the cursor or start a new line. JSON output does not use this: the JSON
// library escapes strings itself.
inline std::string Printable(std::string_view text) {
  using namespace printable_internal;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (b >= 0x20 && b < 0x7f) {
      if (b == '\\') out += '\\';
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    if (b < 0x80) {
      if (b == '\n')
        out += "\\n";
      else if (b == '\r')
        out += "\\r";
      else if (b == '\t')
        out += "\\t";
      else
        AppendHex(out, "\\x", b, 2);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, cp);
    if (n == 0) {
      AppendHex(out, "\\x", b, 2);
      ++i;
    } else if (IsInvisibleControl(cp)) {
      AppendHex(out, "\\u{", cp, 4);
      out += '}';
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace writ
