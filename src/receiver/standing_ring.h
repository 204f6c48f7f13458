// A connection's standing window (docs/protocol.md, "Standing windows"): `slot_count` slots of
// `slot_size` bytes, registered once for the connection's life, that its sender writes small
// deliveries into without a grant. Each slot pairs one `deliver` with one write notification,
// in either order; the bytes are copied out before they are digested (the sender can still
// write the slot), then the slot is cleared and given back (`slots-free`).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/fabric_port.h"
#include "fabric/memory_region.h"
#include "protocol/messages.h"
#include "receiver/notification_router.h"
#include "writ/status.h"

namespace writ::receiver {

class StandingRing {
 public:
  using Clock = std::chrono::steady_clock;

  // Maps and registers the ring and binds a notification tag to `inbox`, counted only when
  // `writer` wrote it (NotificationRouter). `budget` counts the
  // bytes of every ring of the receiver; a ring that would take it past `budget_limit` is
  // refused (kRefused), as is one without a free tag.
  static Result<std::unique_ptr<StandingRing>> Open(
      fabric::FabricPort& node, NotificationRouter& router, std::shared_ptr<Inbox> inbox,
      const fabric::Peer& writer, std::atomic<uint64_t>& budget, uint64_t budget_limit,
      uint32_t slot_count, uint64_t slot_size);
  // Revokes the registration first, then unbinds the tag and unmaps.
  ~StandingRing();
  StandingRing(const StandingRing&) = delete;
  StandingRing& operator=(const StandingRing&) = delete;

  uint16_t tag() const { return tag_; }
  protocol::Ring Describe() const;

  // Why a `deliver` of `bytes` into `slot` cannot be taken (out of range, larger than a slot,
  // in use by another delivery), or nothing.
  std::optional<std::string> WhyNot(uint32_t slot, uint64_t bytes) const;
  // The admitted delivery `id` of `bytes` owns the slot; true when its bytes have landed
  // already.
  bool Claim(uint32_t slot, const std::string& id, uint64_t bytes);
  // A write notification for `slot`: the id of the delivery whose bytes are now complete
  // (copy them out with Copy, then Release), or nothing. An index past the ring is ignored.
  std::optional<std::string> OnNotification(uint32_t slot);
  // The slot's first `bytes`, copied (the sender may still write the slot).
  std::vector<uint8_t> Copy(uint32_t slot, uint64_t bytes) const;
  // Clears the slot and gives it back to the sender at the next TakeFreed: the claiming
  // delivery's bytes; the whole slot when no delivery claimed what landed in it.
  void Release(uint32_t slot);
  // The slot's delivery ended before its bytes landed (refused, aborted): its write may still
  // come, so the slot is freed when it does, or at the timeout.
  void Abandon(uint32_t slot);
  // Frees slots that waited for a deliver or a write for longer than `timeout`.
  void Expire(Clock::time_point now, std::chrono::milliseconds timeout);
  std::vector<uint32_t> TakeFreed();

 private:
  enum class State : uint8_t { kFree, kLanded, kClaimed, kAbandoned };
  struct Slot {
    State state = State::kFree;
    std::string id;
    uint64_t claimed_bytes = 0;  // kClaimed, kAbandoned: its delivery's announced size
    Clock::time_point since;
  };
  StandingRing(NotificationRouter& router, std::atomic<uint64_t>& budget, uint8_t* base,
               uint64_t bytes, uint32_t slot_count, uint64_t slot_size);

  NotificationRouter& router_;
  std::atomic<uint64_t>& budget_;
  uint8_t* base_;
  uint64_t bytes_;
  uint64_t slot_size_;
  std::vector<Slot> slots_;
  fabric::MemoryRegion region_;
  uint16_t tag_ = 0;
  std::vector<uint32_t> freed_;
};

}  // namespace writ::receiver
