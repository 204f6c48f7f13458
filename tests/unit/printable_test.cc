#include "common/printable.h"

#include <gtest/gtest.h>

namespace writ {
namespace {

bool HasControl(const std::string& s) {
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) return true;
  }
  return false;
}

TEST(Printable, PlainTextAndVisibleUtf8AreUnchanged) {
  EXPECT_EQ(Printable("RC-233 (24 MiB)"), "RC-233 (24 MiB)");
  EXPECT_EQ(Printable("durée ≥ 5 µs"), "durée ≥ 5 µs");
}

TEST(Printable, TerminalEscapeSequencesAreShownNotRun) {
  EXPECT_EQ(Printable("\x1b[2Jgone"), "\\x1b[2Jgone");
  EXPECT_EQ(Printable("a\nwrit: valid"), "a\\nwrit: valid");
  EXPECT_EQ(Printable("a\rb\tc\x7f"), "a\\rb\\tc\\x7f");
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(Printable, BackslashIsEscapedSoEscapesAreUnambiguous) {
  EXPECT_EQ(Printable("\\x1b"), "\\\\x1b");
}

TEST(Printable, InvalidUtf8BytesAreHex) {
  EXPECT_EQ(Printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(Printable("\xc3"), "\\xc3");                             // truncated
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(Printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(Printable, C1ControlsAndBidiOverridesAreEscaped) {
  EXPECT_EQ(Printable("\xc2\x9b"
                      "2J"),
            "\\u{009b}2J");  // C1 CSI
  EXPECT_EQ(Printable("a\xe2\x80\xae"
                      "b"),
            "a\\u{202e}b");                           // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(Printable("\xe2\x80\xa8"), "\\u{2028}");  // LINE SEPARATOR
}

TEST(Printable, NoByteStringYieldsAControlCharacter) {
  for (int b = 0; b < 256; ++b) {
    for (int c = 0; c < 256; c += 17) {
      std::string s{static_cast<char>(b), static_cast<char>(c)};
      EXPECT_FALSE(HasControl(Printable(s))) << b << " " << c;
    }
  }
}

}  // namespace
}  // namespace writ
