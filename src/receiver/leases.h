// What an inbound run (inbound_run.h) holds of the receiver's shared resources besides its
// id claim and reservations (reservation.h): a window of the pool, a notification tag routed
// to it, a slot of its connection's ring. Each is given back when its owner ends, and only
// then: nothing releases them by hand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

namespace writ::receiver {

class InboundRun;
class NotificationRouter;
class StandingRing;
class WindowPool;

// One window of the pool. Given back when this ends, its first `exposed` bytes (what a grant
// let a sender write) cleared before another delivery gets it.
class PoolLease {
 public:
  PoolLease() = default;
  PoolLease(WindowPool& pool, uint32_t index) : pool_(&pool), index_(index) {}
  PoolLease(PoolLease&& other) noexcept;
  PoolLease& operator=(PoolLease&& other) noexcept;
  ~PoolLease() { GiveBack(); }

  uint32_t index() const { return index_; }
  void Expose(uint64_t bytes) { exposed_ = bytes; }

 private:
  void GiveBack();

  WindowPool* pool_ = nullptr;  // null: holds nothing
  uint32_t index_ = 0;
  uint64_t exposed_ = 0;
};

// Which run of a connection each of its live notification tags belongs to.
using TagOwners = std::map<uint16_t, InboundRun*>;

// A notification tag bound (NotificationRouter::Bind) and routed to its run; unbound, and no
// longer routed, when this ends.
class TagLease {
 public:
  TagLease() = default;
  TagLease(NotificationRouter& router, TagOwners& owners, uint16_t tag, InboundRun& run);
  TagLease(TagLease&& other) noexcept;
  TagLease& operator=(TagLease&& other) noexcept;
  ~TagLease() { GiveBack(); }

 private:
  void GiveBack();

  NotificationRouter* router_ = nullptr;  // null: holds nothing
  TagOwners* owners_ = nullptr;
  uint16_t tag_ = 0;
};

// A slot of the connection's ring that a `deliver` wrote into. Ended before its bytes were
// copied out, it is abandoned (its write may still land: the slot is freed then, or at the
// timeout); once copied, Release clears it and gives it back to the sender.
class RingSlotLease {
 public:
  RingSlotLease(StandingRing& ring, uint32_t slot) : ring_(&ring), slot_(slot) {}
  RingSlotLease(RingSlotLease&& other) noexcept;
  RingSlotLease& operator=(RingSlotLease&&) = delete;
  ~RingSlotLease();

  uint32_t slot() const { return slot_; }
  bool copied() const { return ring_ == nullptr; }
  void Release();

 private:
  StandingRing* ring_;  // null once released
  uint32_t slot_;
};

}  // namespace writ::receiver
