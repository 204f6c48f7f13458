#include "protocol/codec.h"
#include "protocol/frame.h"

namespace writ::protocol {

FrameReader::FrameReader(Limits limits) : limits_(limits) {}

Status FrameReader::Fail(Status status) {
  failed_ = status;
  // A broken stream keeps nothing it was sent.
  std::vector<uint8_t>().swap(buffer_);
  start_ = 0;
  return status;
}

Status FrameReader::CheckPendingHeader() {
  if (buffered_bytes() < kFrameHeaderBytes) return Status::Ok();
  auto header = ParseFrameHeader(std::span(buffer_).subspan(start_), limits_);
  if (!header.ok()) return Fail(header.status());
  return Status::Ok();
}

Status FrameReader::Feed(std::span<const uint8_t> bytes) {
  if (!failed_.ok()) return failed_;
  if (start_ > 0 && start_ >= buffer_.size() / 2) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(start_));
    start_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  return CheckPendingHeader();
}

Result<std::optional<Message>> FrameReader::Next() {
  if (!failed_.ok()) return failed_;
  const std::span<const uint8_t> pending = std::span(buffer_).subspan(start_);
  if (pending.size() < kFrameHeaderBytes) return std::optional<Message>();
  auto header = ParseFrameHeader(pending, limits_);
  if (!header.ok()) return Fail(header.status());
  const size_t frame_bytes = kFrameHeaderBytes + header->payload_bytes;
  if (pending.size() < frame_bytes) return std::optional<Message>();
  auto message = DecodePayload(header->type,
                               pending.subspan(kFrameHeaderBytes, header->payload_bytes), limits_);
  if (!message.ok()) return Fail(message.status());
  start_ += frame_bytes;
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  }
  return std::optional<Message>(std::move(message).value());
}

}  // namespace writ::protocol
