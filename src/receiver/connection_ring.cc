// The connection's standing window (docs/protocol.md, "Standing windows"): the ring granted
// after the first retained delivery, `deliver` messages, slot notifications, and slots given
// back.
#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

Status Connection::GrantRingOnce() {
  const ReceiverOptions& opt = core_.options;
  if (ring_ || ring_tried_ || opt.ring_slots == 0 || opt.ring_slot_size == 0) return Status::Ok();
  ring_tried_ = true;
  auto ring = StandingRing::Open(*core_.node, core_.router, inbox_, writer(), core_.ring_bytes,
                                 opt.window_pool_bytes, opt.ring_slots, opt.ring_slot_size);
  if (!ring.ok()) {
    // Not an error: this connection's deliveries keep the announce/grant path.
    Tell("connection from " + channel_.peer() +
         " gets no standing window: " + ring.status().message());
    return Status::Ok();
  }
  ring_ = std::move(ring).value();
  if (core_.progress != nullptr) core_.progress->Wake();
  // Ahead of the receipts waiting in the outbox: rungs reached together stay one message.
  return SendNow(ring_->Describe());
}

Status Connection::OnDeliver(protocol::Deliver& m) {
  const std::string& id = m.announce.delivery_id;
  if (!ring_) {
    return Refuse(id, RefuseReason::kMalformed,
                  "deliver " + id + ": no standing window (ring) was granted on this connection");
  }
  if (auto why = ring_->WhyNot(m.slot, m.announce.bytes)) {
    // The slot is left as it is: it may hold another delivery's bytes.
    const bool in_use =
        m.slot < ring_->Describe().slot_count && m.announce.bytes <= ring_->Describe().slot_size;
    return Refuse(id, in_use ? RefuseReason::kConflictingId : RefuseReason::kMalformed,
                  "deliver " + id + " refused: " + *why);
  }
  // Abandoned as this ends unless a run takes it: a refused deliver's write may still land,
  // and is then dropped.
  RingSlotLease slot(*ring_, m.slot);
  const uint64_t bytes = m.announce.bytes;
  WRIT_ASSIGN_OR_RETURN(InboundRun* const run,
                        OnAnnounce(std::move(m.announce), /*bytes_in_slot=*/true));
  if (run == nullptr) return Status::Ok();
  const bool landed = ring_->Claim(m.slot, run->id(), bytes);
  return Settle(*run, run->OnDeliver(std::move(slot), *ring_, landed));
}

Status Connection::OnRingNotification(uint32_t slot) {
  auto id = ring_->OnNotification(slot);
  if (!id) return Status::Ok();
  auto it = runs_.find(*id);
  if (it == runs_.end()) return Status::Ok();
  return Settle(*it->second, it->second->OnSlotLanded(*ring_));
}

Status Connection::SendFreedSlots() {
  if (!ring_) return Status::Ok();
  std::vector<uint32_t> freed = ring_->TakeFreed();
  if (freed.empty()) return Status::Ok();
  return SendNow(protocol::SlotsFree{ring_->tag(), std::move(freed)});
}

}  // namespace writ::receiver
