// The wire format of control messages (layout: docs/protocol.md). Each frame
// is a fixed header (frame.h) and a payload of little-endian fixed-width
// integers and u32-length-prefixed strings/bytes, in field order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/limits.h"
#include "protocol/messages.h"
#include "writ/status.h"

namespace writ::protocol {

// One complete frame. Encoding does not validate; ControlChannel::Send does
// (Validate in validate.h), and the peer's decoder refuses what is invalid.
std::vector<uint8_t> Encode(const Message& message);
// The same frame appended to `out` (which keeps its capacity from one use to the next);
// its size.
size_t EncodeAppend(const Message& message, std::vector<uint8_t>& out);

// What a sender signs: "writ-announce-v1", the receiver's id (so an announce signed for
// one receiver is refused by another), then the announce's payload encoding with an
// empty signature.
// What a signed query's signature covers, bound to one receiver like an announce's.
std::vector<uint8_t> QuerySigningBytes(const Query& query, std::string_view receiver_id);
std::vector<uint8_t> RemoveSigningBytes(const Remove& remove, std::string_view receiver_id);
std::vector<uint8_t> AnnounceSigningBytes(const Announce& announce, std::string_view receiver_id);
// `string "writ-commit-v1"`, `string receiver_id`, `bytes` the announce's nonce, then the
// commit payload with its signature empty.
std::vector<uint8_t> CommitSigningBytes(const Commit& commit, std::string_view receiver_id,
                                        std::span<const uint8_t> announce_nonce);

// Exactly one frame: header, payload, no bytes after it. The message is
// checked structurally and semantically (Validate) before it is returned.
Result<Message> DecodeFrame(std::span<const uint8_t> frame, const Limits& limits);

// The payload of a frame whose header was already checked.
Result<Message> DecodePayload(MessageType type, std::span<const uint8_t> payload,
                              const Limits& limits);

// Incremental decoding of a byte stream: Feed() bytes as they arrive, Next()
// yields complete messages in order, or nothing while a frame is incomplete.
// A header is checked as soon as its 12 bytes are in, so an oversize length is
// refused before its payload is waited for or any memory is set aside for it.
// The first error is sticky: a stream that broke once cannot be resynchronised.
class FrameReader {
 public:
  explicit FrameReader(Limits limits = {});

  Status Feed(std::span<const uint8_t> bytes);
  Result<std::optional<Message>> Next();

  // Bytes fed but not yet returned as messages (a partial frame, or more).
  size_t buffered_bytes() const { return buffer_.size() - start_; }
  // Memory held for buffering; tests use it to show nothing was reserved
  // from a length read off the wire.
  size_t buffer_capacity() const { return buffer_.capacity(); }
  const Limits& limits() const { return limits_; }

 private:
  Status CheckPendingHeader();
  Status Fail(Status status);

  Limits limits_;
  std::vector<uint8_t> buffer_;
  size_t start_ = 0;  // first byte not yet consumed
  Status failed_;
};

}  // namespace writ::protocol
