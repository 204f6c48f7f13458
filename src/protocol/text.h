// Checks human text from the wire before it reaches a log or a terminal.
#pragma once

#include <cstddef>
#include <string_view>

namespace writ::protocol {

struct TextProblem {
  enum Kind { kNone, kInvalidUtf8, kControl };
  Kind kind = kNone;
  size_t offset = 0;  // byte offset of the offending sequence
};

// The first problem in `text`: invalid UTF-8 (overlong forms, surrogates,
// values above U+10FFFF, truncated sequences) or a C0/C1 control or DEL.
TextProblem FindTextProblem(std::string_view text);

}  // namespace writ::protocol
