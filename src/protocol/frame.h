// The fixed frame header that precedes every payload:
//   offset 0  4 bytes  magic "WRIT"
//   offset 4  u16 LE   protocol version
//   offset 6  u8       message type (MessageType)
//   offset 7  u8       flags, must be 0
//   offset 8  u32 LE   payload length
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/limits.h"
#include "protocol/messages.h"
#include "writ/status.h"

namespace writ::protocol {

inline constexpr size_t kFrameHeaderBytes = 12;
inline constexpr uint8_t kFrameMagic[4] = {'W', 'R', 'I', 'T'};

struct FrameHeader {
  uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kHello;
  uint32_t payload_bytes = 0;
};

// Largest payload the limits allow (max_frame_bytes less the header).
uint32_t MaxPayloadBytes(const Limits& limits);

// Parses and checks the first kFrameHeaderBytes of `bytes` (which must hold
// at least that many): magic, version, known type, zero flags and a payload
// length within the limits. Nothing is allocated from the declared length.
Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t> bytes, const Limits& limits);

void WriteFrameHeader(const FrameHeader& header, uint8_t* out);

}  // namespace writ::protocol
