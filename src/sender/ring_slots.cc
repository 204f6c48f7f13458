#include "sender/ring_slots.h"

#include <cstdlib>

namespace writ::sender {

RingSlots::~RingSlots() {
  Close();
  std::free(staging_);
}

Status RingSlots::Adopt(fabric::FabricPort& node, const protocol::Ring& ring) {
  if (ring_) return Status::Ok();
  const uint64_t bytes = uint64_t{ring.slot_count} * ring.slot_size;
  // Aligned allocation needs a multiple of the alignment.
  staging_ = static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
  if (staging_ == nullptr) return Status::Internal("cannot allocate the ring's staging");
  auto region = node.Register(staging_, bytes, fabric::Access::kLocalSource);
  if (!region.ok()) {
    std::free(staging_);
    staging_ = nullptr;
    return region.status().Annotate("registering the ring's staging");
  }
  region_ = std::move(region).value();
  ring_ = ring;
  lent_.assign(ring.slot_count, false);
  free_.clear();
  for (uint32_t i = ring.slot_count; i > 0; --i) free_.push_back(i - 1);
  return Status::Ok();
}

void RingSlots::Free(const protocol::SlotsFree& freed) {
  if (!ring_ || freed.window_id != ring_->window_id) return;
  for (uint32_t slot : freed.slots) {
    if (slot >= lent_.size() || !lent_[slot]) continue;
    lent_[slot] = false;
    free_.push_back(slot);
  }
}

std::optional<uint32_t> RingSlots::Take() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  lent_[slot] = true;
  return slot;
}

void RingSlots::Close() { (void)region_.Close(); }

}  // namespace writ::sender
