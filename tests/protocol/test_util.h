// Helpers for building frames by hand in tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "protocol/wire.h"

namespace writ::protocol::testing {

// A frame with an arbitrary header around `payload`.
inline std::vector<uint8_t> RawFrame(uint8_t type, const std::vector<uint8_t>& payload,
                                     uint16_t version = kProtocolVersion, uint8_t flags = 0,
                                     std::optional<uint32_t> length = std::nullopt) {
  std::vector<uint8_t> frame(kFrameHeaderBytes);
  FrameHeader header;
  header.version = version;
  header.type = static_cast<MessageType>(type);
  header.payload_bytes = length.value_or(static_cast<uint32_t>(payload.size()));
  WriteFrameHeader(header, frame.data());
  frame[7] = flags;
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

inline std::vector<uint8_t> PayloadOf(const std::vector<uint8_t>& frame) {
  return std::vector<uint8_t>(frame.begin() + kFrameHeaderBytes, frame.end());
}

#define EXPECT_ERROR(result_or_status, error_code, substring)                             \
  do {                                                                                    \
    const ::writ::Status writ_s_ = ::writ::protocol::testing::StatusOf(result_or_status); \
    EXPECT_EQ(writ_s_.code(), (error_code)) << writ_s_.ToString();                        \
    EXPECT_NE(writ_s_.message().find(substring), std::string::npos)                       \
        << "message: " << writ_s_.message() << "\nexpected to contain: " << (substring);  \
  } while (0)

inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

}  // namespace writ::protocol::testing
