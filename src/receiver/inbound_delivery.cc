#include "receiver/inbound_delivery.h"

#include <algorithm>

namespace writ::receiver {

InboundDelivery::InboundDelivery(protocol::Announce announce,
                                 std::unique_ptr<vocabulary::Digester> digester,
                                 std::unique_ptr<store::PayloadWriter> writer)
    : announce_(std::move(announce)),
      chunks_(announce_.bytes == 0
                  ? 0
                  : (announce_.bytes + announce_.chunk_size - 1) / announce_.chunk_size),
      digester_(std::move(digester)),
      writer_(std::move(writer)) {}

bool InboundDelivery::NeedsWindow(uint32_t max_windows) const {
  return next_grant_chunk_ < chunks_ && windows_.size() < max_windows;
}

uint32_t InboundDelivery::ChunksForWindow(uint64_t window_bytes) const {
  const uint64_t fit = std::max<uint64_t>(1, window_bytes / announce_.chunk_size);
  // 16 bits of the notification value index a chunk within its window.
  const uint64_t capped = std::min<uint64_t>(fit, 65535);
  return static_cast<uint32_t>(std::min<uint64_t>(capped, chunks_ - next_grant_chunk_));
}

uint64_t InboundDelivery::BytesForChunks(uint64_t first_chunk, uint32_t count) const {
  const uint64_t start = first_chunk * announce_.chunk_size;
  const uint64_t end = std::min(announce_.bytes, (first_chunk + count) * announce_.chunk_size);
  return end - start;
}

void InboundDelivery::AddWindow(LiveWindow window) {
  next_grant_chunk_ = window.first_chunk + window.chunk_count;
  window.notified.assign(window.chunk_count, false);
  windows_.push_back(std::move(window));
}

Status InboundDelivery::OnNotification(uint16_t tag, uint16_t chunk_in_window) {
  for (auto& w : windows_) {
    if (w.tag != tag) continue;
    if (chunk_in_window >= w.chunk_count) {
      return Status::Malformed("notification for chunk " + std::to_string(chunk_in_window) +
                               " of window " + std::to_string(tag) + ", which has only " +
                               std::to_string(w.chunk_count) + " chunks");
    }
    if (!w.notified[chunk_in_window]) {
      w.notified[chunk_in_window] = true;
      ++w.notified_count;
      ++received_;
    }
    return Status::Ok();
  }
  return Status::NotFound("notification for window " + std::to_string(tag) +
                          ", which this delivery does not hold");
}

Result<std::vector<LiveWindow>> InboundDelivery::Consume() {
  std::vector<LiveWindow> consumed;
  while (!windows_.empty() && windows_.front().notified_count == windows_.front().chunk_count) {
    LiveWindow& w = windows_.front();
    WRIT_RETURN_IF_ERROR(ConsumeWindow(w));
    consumed.push_back(std::move(w));
    windows_.pop_front();
  }
  return consumed;
}

// Revoked first: once its key is closed no write can land in the window, so the bytes
// digested are exactly the bytes handed to the store (or, placed, the bytes kept).
Status InboundDelivery::ConsumeWindow(LiveWindow& w) {
  Status revoked = w.region.Close();
  if (!revoked.ok()) return revoked.Annotate("revoking a window before validating its bytes");
  const std::span<const uint8_t> bytes(w.data, w.length);
  digester_->Update(bytes);
  WRIT_RETURN_IF_ERROR(writer_->Write(w.first_chunk * announce_.chunk_size, bytes));
  next_consume_chunk_ = w.first_chunk + w.chunk_count;
  return Status::Ok();
}

std::vector<LiveWindow> InboundDelivery::TakeWindows() {
  std::vector<LiveWindow> all(std::make_move_iterator(windows_.begin()),
                              std::make_move_iterator(windows_.end()));
  windows_.clear();
  return all;
}

}  // namespace writ::receiver
