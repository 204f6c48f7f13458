// Lowercase hex, used for digests, keys and signatures wherever they are written as text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"

namespace writ {

// Lowercase hex; FromHex accepts either case and refuses odd lengths and
// non-hex characters.
std::string ToHex(std::span<const uint8_t> bytes);
// ToHex into `out`, replacing what it held (its room is reused).
void AssignHex(std::string& out, std::span<const uint8_t> bytes);
Result<std::vector<uint8_t>> FromHex(std::string_view hex);

}  // namespace writ
