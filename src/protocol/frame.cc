#include "protocol/frame.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "protocol/wire.h"

namespace writ::protocol {
namespace {

std::string HexByte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02x", b);
  return buf;
}

}  // namespace

uint32_t MaxPayloadBytes(const Limits& limits) {
  return limits.max_frame_bytes > kFrameHeaderBytes
             ? limits.max_frame_bytes - static_cast<uint32_t>(kFrameHeaderBytes)
             : 0;
}

Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t> bytes, const Limits& limits) {
  if (bytes.size() < kFrameHeaderBytes) {
    return Status::Malformed("frame: truncated header, " + std::to_string(bytes.size()) + " of " +
                             std::to_string(kFrameHeaderBytes) + " bytes");
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kFrameMagic, sizeof kFrameMagic) != 0) {
    return Status::Malformed("frame.magic: " + HexByte(p[0]) + HexByte(p[1]) + HexByte(p[2]) +
                             HexByte(p[3]) + ", expected 57524954 (\"WRIT\")");
  }
  FrameHeader header;
  header.version = LoadLe16(p + 4);
  if (header.version != kProtocolVersion) {
    return Status::Unsupported("frame.version: " + std::to_string(header.version) +
                               ", this build speaks " + std::to_string(kProtocolVersion));
  }
  const uint8_t type = p[6];
  header.type = static_cast<MessageType>(type);
  if (MessageTypeName(header.type) == "unknown") {
    return Status::Malformed("frame.type: unknown message type " + std::to_string(type));
  }
  if (p[7] != 0) {
    return Status::Malformed("frame.flags: " + std::to_string(p[7]) + ", must be 0");
  }
  header.payload_bytes = LoadLe32(p + 8);
  if (header.payload_bytes > MaxPayloadBytes(limits)) {
    return Status::Malformed("frame.length: " + std::string(MessageTypeName(header.type)) +
                             " payload of " + std::to_string(header.payload_bytes) +
                             " bytes exceeds the limit of " +
                             std::to_string(MaxPayloadBytes(limits)) + " bytes");
  }
  return header;
}

void WriteFrameHeader(const FrameHeader& header, uint8_t* out) {
  std::memcpy(out, kFrameMagic, sizeof kFrameMagic);
  StoreLe16(out + 4, header.version);
  out[6] = static_cast<uint8_t>(header.type);
  out[7] = 0;
  StoreLe32(out + 8, header.payload_bytes);
}

}  // namespace writ::protocol
