#include "receiver/standing_ring.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace writ::receiver {

Result<std::unique_ptr<StandingRing>> StandingRing::Open(
    fabric::FabricPort& node, NotificationRouter& router, std::shared_ptr<Inbox> inbox,
    const fabric::Peer& writer, std::atomic<uint64_t>& budget, uint64_t budget_limit,
    uint32_t slot_count, uint64_t slot_size) {
  if (slot_count == 0 || slot_count > protocol::kMaxRingSlots || slot_size == 0) {
    return Status::InvalidArgument("a ring needs 1 to 65536 slots of at least 1 byte");
  }
  const uint64_t bytes = uint64_t{slot_count} * slot_size;
  // Counted before anything is mapped: rings together stay within the budget.
  if (budget.fetch_add(bytes) + bytes > budget_limit) {
    budget.fetch_sub(bytes);
    return Status::Refused("the receiver's rings hold their limit of " +
                           std::to_string(budget_limit) + " bytes");
  }
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    budget.fetch_sub(bytes);
    return Status::Internal("mapping a ring of " + std::to_string(bytes) + " bytes failed");
  }
  std::unique_ptr<StandingRing> ring(new StandingRing(router, budget, static_cast<uint8_t*>(mapped),
                                                      bytes, slot_count, slot_size));
  WRIT_ASSIGN_OR_RETURN(ring->region_, node.Register(mapped, bytes, fabric::Access::kRemoteWrite));
  auto tag = router.Bind(std::move(inbox), writer);
  if (!tag) return Status::Refused("no notification tag is free for a ring");
  ring->tag_ = *tag;
  return ring;
}

StandingRing::StandingRing(NotificationRouter& router, std::atomic<uint64_t>& budget, uint8_t* base,
                           uint64_t bytes, uint32_t slot_count, uint64_t slot_size)
    : router_(router),
      budget_(budget),
      base_(base),
      bytes_(bytes),
      slot_size_(slot_size),
      slots_(slot_count) {}

StandingRing::~StandingRing() {
  (void)region_.Close();  // no write may land once the memory is gone
  if (tag_ != 0) router_.Unbind(tag_);
  munmap(base_, bytes_);
  budget_.fetch_sub(bytes_);
}

protocol::Ring StandingRing::Describe() const {
  return protocol::Ring{tag_, region_.descriptor().base, region_.descriptor().key, slot_size_,
                        static_cast<uint32_t>(slots_.size())};
}

std::optional<std::string> StandingRing::WhyNot(uint32_t slot, uint64_t bytes) const {
  if (slot >= slots_.size()) {
    return "slot " + std::to_string(slot) + " is out of range: the ring has " +
           std::to_string(slots_.size()) + " slots";
  }
  if (bytes > slot_size_) {
    return std::to_string(bytes) + " bytes do not fit a ring slot of " +
           std::to_string(slot_size_) + " bytes";
  }
  const Slot& s = slots_[slot];
  if (s.state == State::kClaimed || s.state == State::kAbandoned) {
    return "slot " + std::to_string(slot) + " is in use" +
           (s.state == State::kClaimed ? " by delivery " + s.id : " (not given back yet)");
  }
  return std::nullopt;
}

bool StandingRing::Claim(uint32_t slot, const std::string& id, uint64_t bytes) {
  Slot& s = slots_[slot];
  const bool landed = s.state == State::kLanded;
  s.state = State::kClaimed;
  s.id = landed ? std::string() : id;
  s.claimed_bytes = std::min(bytes, slot_size_);
  s.since = Clock::now();
  return landed;
}

std::optional<std::string> StandingRing::OnNotification(uint32_t slot) {
  if (slot >= slots_.size()) return std::nullopt;
  Slot& s = slots_[slot];
  switch (s.state) {
    case State::kFree:
      s.state = State::kLanded;
      s.since = Clock::now();
      return std::nullopt;
    case State::kClaimed:
      if (s.id.empty()) return std::nullopt;  // a second notification: consumed already
      return std::exchange(s.id, std::string());
    case State::kAbandoned: Release(slot); return std::nullopt;
    case State::kLanded: return std::nullopt;  // a duplicate
  }
  return std::nullopt;
}

std::vector<uint8_t> StandingRing::Copy(uint32_t slot, uint64_t bytes) const {
  const uint8_t* at = base_ + uint64_t{slot} * slot_size_;
  return std::vector<uint8_t>(at, at + std::min(bytes, slot_size_));
}

void StandingRing::Release(uint32_t slot) {
  Slot& s = slots_[slot];
  // What a delivery left is never read for another: the bytes it was announced with are
  // cleared (a 4 KiB delivery clears 4 KiB, not the 64 KiB slot). The ring is this
  // connection's alone, mapped fresh (zero) for it, so whatever lies past them was written
  // by this connection's own sender (past what it announced); bytes that landed with no
  // delivery to claim them are of unknown length: the whole slot is cleared.
  const bool claimed = s.state == State::kClaimed || s.state == State::kAbandoned;
  std::memset(base_ + uint64_t{slot} * slot_size_, 0, claimed ? s.claimed_bytes : slot_size_);
  s = Slot{};
  freed_.push_back(slot);
}

void StandingRing::Abandon(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.state == State::kLanded || (s.state == State::kClaimed && s.id.empty())) {
    Release(slot);  // its bytes landed already: nothing more will come
    return;
  }
  s.state = State::kAbandoned;
  s.id.clear();
  s.since = Clock::now();
}

void StandingRing::Expire(Clock::time_point now, std::chrono::milliseconds timeout) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    const bool waits = s.state == State::kLanded || s.state == State::kAbandoned;
    if (waits && now - s.since >= timeout) Release(i);
  }
}

std::vector<uint32_t> StandingRing::TakeFreed() { return std::exchange(freed_, {}); }

}  // namespace writ::receiver
