#include "receiver/leases.h"

#include <utility>

#include "receiver/notification_router.h"
#include "receiver/standing_ring.h"
#include "receiver/window_pool.h"

namespace writ::receiver {

PoolLease::PoolLease(PoolLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), index_(other.index_), exposed_(other.exposed_) {}

PoolLease& PoolLease::operator=(PoolLease&& other) noexcept {
  if (this != &other) {
    GiveBack();
    pool_ = std::exchange(other.pool_, nullptr);
    index_ = other.index_;
    exposed_ = other.exposed_;
  }
  return *this;
}

void PoolLease::GiveBack() {
  if (pool_ != nullptr) pool_->Release(index_, exposed_);
  pool_ = nullptr;
}

TagLease::TagLease(NotificationRouter& router, TagOwners& owners, uint16_t tag, InboundRun& run)
    : router_(&router), owners_(&owners), tag_(tag) {
  owners[tag] = &run;
}

TagLease::TagLease(TagLease&& other) noexcept
    : router_(std::exchange(other.router_, nullptr)), owners_(other.owners_), tag_(other.tag_) {}

TagLease& TagLease::operator=(TagLease&& other) noexcept {
  if (this != &other) {
    GiveBack();
    router_ = std::exchange(other.router_, nullptr);
    owners_ = other.owners_;
    tag_ = other.tag_;
  }
  return *this;
}

void TagLease::GiveBack() {
  if (router_ == nullptr) return;
  router_->Unbind(tag_);
  owners_->erase(tag_);
  router_ = nullptr;
}

RingSlotLease::RingSlotLease(RingSlotLease&& other) noexcept
    : ring_(std::exchange(other.ring_, nullptr)), slot_(other.slot_) {}

RingSlotLease::~RingSlotLease() {
  if (ring_ != nullptr) ring_->Abandon(slot_);
}

void RingSlotLease::Release() {
  if (ring_ != nullptr) ring_->Release(slot_);
  ring_ = nullptr;
}

}  // namespace writ::receiver
