#include "receiver/inbound_delivery.h"

#include <algorithm>

namespace writ::receiver {

InboundDelivery::InboundDelivery(protocol::Announce announce, std::shared_ptr<DigestStream> digest,
                                 std::unique_ptr<store::PayloadWriter> writer)
    : announce_(std::move(announce)),
      chunks_(announce_.bytes == 0
                  ? 0
                  : (announce_.bytes + announce_.chunk_size - 1) / announce_.chunk_size),
      digest_(std::move(digest)),
      writer_(std::move(writer)) {}

InboundDelivery::~InboundDelivery() { digest_->Cancel(); }

bool InboundDelivery::NeedsWindow(uint32_t max_windows) const {
  return next_grant_chunk_ < chunks_ && windows_.size() < max_windows;
}

uint32_t InboundDelivery::ChunksForWindow(uint64_t window_bytes) const {
  const uint64_t fit = std::max<uint64_t>(1, window_bytes / announce_.chunk_size);
  // 16 bits of the notification value index a chunk within its window.
  const uint64_t capped = std::min<uint64_t>(fit, 65535);
  return static_cast<uint32_t>(std::min<uint64_t>(capped, chunks_ - next_grant_chunk_));
}

// A window's chunks are read only once it is revoked, and it is revoked when its last
// chunk is notified. Were the last window w chunks, the verdict would wait for w chunks'
// digest after the last notification; with each window at most half of what is left, a
// window of s chunks is followed by at least s more, during whose transfer it is digested
// (when the digest keeps up with the transport), and the last window is one chunk.
uint32_t InboundDelivery::ChunksToGrant(uint64_t window_bytes) const {
  const uint64_t half = std::max<uint64_t>(1, (chunks_ - next_grant_chunk_) / 2);
  return static_cast<uint32_t>(std::min<uint64_t>(ChunksForWindow(window_bytes), half));
}

uint64_t InboundDelivery::BytesForChunks(uint64_t first_chunk, uint32_t count) const {
  const uint64_t start = first_chunk * announce_.chunk_size;
  const uint64_t end = std::min(announce_.bytes, (first_chunk + count) * announce_.chunk_size);
  return end - start;
}

void InboundDelivery::AddWindow(LiveWindow window) {
  next_grant_chunk_ = window.first_chunk + window.chunk_count;
  window.landing.assign(window.chunk_count, 0);
  windows_.push_back(std::move(window));
}

Status InboundDelivery::OnLanding(uint16_t tag, uint16_t chunk_in_window, Landing how,
                                  uint8_t needed) {
  const char* what = how == Landing::kNotified ? "notification" : "written";
  for (auto& w : windows_) {
    if (w.tag != tag) continue;
    if (chunk_in_window >= w.chunk_count) {
      return Status::Malformed(std::string(what) + " for chunk " + std::to_string(chunk_in_window) +
                               " of window " + std::to_string(tag) + ", which has only " +
                               std::to_string(w.chunk_count) + " chunks");
    }
    uint8_t& seen = w.landing[chunk_in_window];
    if ((seen & needed) == needed) return Status::Ok();  // counted already
    seen |= static_cast<uint8_t>(how);
    if ((seen & needed) == needed) {
      ++w.landed_count;
      ++received_;
    }
    return Status::Ok();
  }
  return Status::NotFound(std::string(what) + " for window " + std::to_string(tag) +
                          ", which this delivery does not hold");
}

Status InboundDelivery::Consume() {
  while (!windows_.empty() && windows_.front().landed_count == windows_.front().chunk_count) {
    WRIT_RETURN_IF_ERROR(ConsumeWindow(windows_.front()));
    digesting_.push_back(std::move(windows_.front()));
    windows_.erase(windows_.begin());
  }
  return Status::Ok();
}

// Revoked first: once its key is closed no write can land in the window, so the bytes
// digested are exactly the bytes handed to the store (or, placed, the bytes kept).
Status InboundDelivery::ConsumeWindow(LiveWindow& w) {
  Status revoked = w.region.Close();
  if (!revoked.ok()) return revoked.Annotate("revoking a window before validating its bytes");
  const std::span<const uint8_t> bytes(w.data, w.length);
  const uint64_t offset = w.first_chunk * announce_.chunk_size;
  WRIT_RETURN_IF_ERROR(writer_->Write(offset, bytes));
  digest_->Submit(w.first_chunk, offset, bytes);
  next_consume_chunk_ = w.first_chunk + w.chunk_count;
  return Status::Ok();
}

Status InboundDelivery::ConsumeCopy(std::vector<uint8_t> bytes) {
  if (bytes.size() != announce_.bytes) {
    return Status::Internal("a ring slot's copy of " + std::to_string(bytes.size()) +
                            " bytes for a delivery of " + std::to_string(announce_.bytes));
  }
  copy_ = std::move(bytes);
  WRIT_RETURN_IF_ERROR(writer_->Write(0, copy_));
  digest_->Submit(0, 0, copy_, DigestStream::Where::kHereIfSmall);
  received_ = chunks_;
  next_consume_chunk_ = chunks_;
  return Status::Ok();
}

std::vector<LiveWindow> InboundDelivery::TakeDigested() {
  std::vector<LiveWindow> digested;
  for (uint64_t first_chunk : digest_->TakeDone()) {
    auto it = std::find_if(digesting_.begin(), digesting_.end(),
                           [&](const LiveWindow& w) { return w.first_chunk == first_chunk; });
    if (it == digesting_.end()) continue;
    digested.push_back(std::move(*it));
    digesting_.erase(it);
  }
  return digested;
}

}  // namespace writ::receiver
