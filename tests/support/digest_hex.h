// The xxh3-128 digest of some bytes as hex, as writ's receipts name it. One definition for
// the test files of an executable, which are unity-built together.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/hex.h"
#include "vocabulary/digest.h"

namespace writ::testing {

inline std::string DigestOf(std::span<const uint8_t> bytes) {
  auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
  if (!digester.ok()) return "no xxh3-128 digester: " + digester.status().ToString();
  (*digester)->Update(bytes);
  return writ::ToHex((*digester)->Finish());
}

}  // namespace writ::testing
