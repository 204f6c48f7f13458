// Fuzzes the control protocol decoder. Properties checked on every input:
//  - DecodeFrame never crashes, leaks or reads out of bounds (sanitizers);
//  - a decoded message is valid, re-encodes to exactly the input bytes
//    (the encoding is canonical) and decodes again to an equal message;
//  - FrameReader fed the same bytes in input-derived pieces agrees with
//    DecodeFrame, and never holds more than it was fed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <vector>

#include "protocol/codec.h"
#include "protocol/validate.h"

namespace {

using writ::protocol::DecodeFrame;
using writ::protocol::Encode;
using writ::protocol::FrameReader;
using writ::protocol::Limits;
using writ::protocol::Message;

void Require(bool condition) {
  if (!condition) std::abort();
}

// Feeds `bytes` in pieces whose sizes come from the bytes themselves, then
// drains; returns the first message, or nothing on error / incomplete frame.
std::optional<Message> ThroughReader(std::span<const uint8_t> bytes, const Limits& limits) {
  FrameReader reader(limits);
  size_t pos = 0;
  size_t step = 1;
  std::optional<Message> first;
  while (pos < bytes.size()) {
    const size_t n = std::min(bytes.size() - pos, step);
    if (!reader.Feed(bytes.subspan(pos, n)).ok()) return std::nullopt;
    Require(reader.buffered_bytes() <= bytes.size());
    pos += n;
    step = 1 + bytes[pos - 1] % 61;
    auto next = reader.Next();
    if (!next.ok()) return std::nullopt;
    if (next->has_value() && !first) first = std::move(**next);
  }
  return first;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  Limits limits;
  // Small limits now and then so the size checks are reached with small inputs.
  if (size > 0 && data[size - 1] == 0xa5) {
    limits.max_frame_bytes = 96;
    limits.max_id_bytes = 8;
    limits.max_address_bytes = 8;
    limits.max_name_bytes = 8;
    limits.max_detail_bytes = 8;
  }
  auto decoded = DecodeFrame(input, limits);
  if (!decoded.ok()) {
    Require(!decoded.status().message().empty());
    return 0;
  }
  Require(writ::protocol::Validate(*decoded, limits).ok());
  const std::vector<uint8_t> again = Encode(*decoded);
  Require(again.size() == size && std::equal(again.begin(), again.end(), data));
  auto twice = DecodeFrame(again, limits);
  Require(twice.ok() && *twice == *decoded);

  auto streamed = ThroughReader(input, limits);
  Require(streamed.has_value() && *streamed == *decoded);
  return 0;
}
