// The sender's side of a standing window (docs/protocol.md, "Standing windows"): the ring
// the receiver granted, registered staging of the same shape, and which slots are free. A
// slot is taken by one delivery and free again only when the receiver says so (slots-free):
// it has copied the bytes out and cleared the slot.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fabric/fabric_port.h"
#include "fabric/memory_region.h"
#include "protocol/messages.h"
#include "writ/status.h"

namespace writ::sender {

class RingSlots {
 public:
  RingSlots() = default;
  ~RingSlots();
  RingSlots(const RingSlots&) = delete;
  RingSlots& operator=(const RingSlots&) = delete;

  // The receiver's ring: staging of slot_count x slot_size registered once. A second ring
  // is ignored (a receiver grants one per connection).
  Status Adopt(fabric::FabricPort& node, const protocol::Ring& ring);
  // Slots the receiver gave back; any it never lent, or of another ring, are ignored.
  void Free(const protocol::SlotsFree& freed);
  bool granted() const { return ring_.has_value(); }
  const protocol::Ring& ring() const { return *ring_; }
  // A free slot, taken, or nothing.
  std::optional<uint32_t> Take();
  uint32_t free_count() const { return static_cast<uint32_t>(free_.size()); }
  uint8_t* slot(uint32_t index) const { return staging_ + uint64_t{index} * ring_->slot_size; }
  const fabric::MemoryRegion& region() const { return region_; }
  // Closes the registration (before the fabric node closes).
  void Close();

 private:
  std::optional<protocol::Ring> ring_;
  uint8_t* staging_ = nullptr;
  fabric::MemoryRegion region_;
  std::vector<uint32_t> free_;  // a stack: the slot used last is reused first (warm)
  std::vector<bool> lent_;
};

}  // namespace writ::sender
