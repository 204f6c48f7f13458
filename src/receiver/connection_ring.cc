// The connection's standing window (docs/protocol.md, "Standing windows"): the ring granted
// after the first admitted delivery, `deliver` messages, slot notifications, and slots given
// back.
#include "receiver/admission.h"
#include "receiver/connection.h"

namespace writ::receiver {

using admission::ReasonFor;
using protocol::RefuseReason;

Status Connection::MaybeGrantRing() {
  const ReceiverOptions& opt = core_.options;
  if (ring_ || ring_tried_ || opt.ring_slots == 0 || opt.ring_slot_size == 0) return Status::Ok();
  ring_tried_ = true;
  auto ring = StandingRing::Open(*core_.node, core_.router, inbox_, Writer(), core_.ring_bytes,
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

Status Connection::OnDeliver(const protocol::Deliver& m) {
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
  const bool in_progress = Find(id) != nullptr;
  WRIT_RETURN_IF_ERROR(OnAnnounce(m.announce, /*bytes_in_slot=*/true));
  if (in_progress || Find(id) == nullptr) {
    ring_->Abandon(m.slot);  // refused: its write may still land, and is then dropped
    return Status::Ok();
  }
  return TakeDeliver(m);
}

// An admitted deliver: its commit, then its slot (copied out at once if its bytes landed).
Status Connection::TakeDeliver(const protocol::Deliver& m) {
  const std::string& id = m.announce.delivery_id;
  InProgress& p = *Find(id);
  p.ring_slot = m.slot;
  p.delivery->ExpectCopy();
  const protocol::Commit commit{id, m.digest, m.commit_signature};
  if (auto refusal = admission::CommitUsable(p.delivery->announce(), commit, core_.signing_id)) {
    EndDelivery(id);
    return Send(*refusal);
  }
  TakeCommit(p, commit);
  p.last_progress = Clock::now();
  if (ring_->Claim(m.slot, id)) return ConsumeSlot(id);
  return Status::Ok();
}

Status Connection::OnRingNotification(uint32_t slot) {
  auto id = ring_->OnNotification(slot);
  return id ? ConsumeSlot(*id) : Status::Ok();
}

// Copied out before anything reads the bytes: the sender can write the slot until the copy,
// so what is digested and stored is the copy; the slot is then cleared and given back.
Status Connection::ConsumeSlot(const std::string& id) {
  InProgress* p = Find(id);
  if (p == nullptr || !p->ring_slot || p->slot_copied) return Status::Ok();
  const uint32_t slot = *p->ring_slot;
  std::vector<uint8_t> bytes = ring_->Copy(slot, p->delivery->announce().bytes);
  ring_->Release(slot);
  p->slot_copied = true;
  p->last_progress = Clock::now();
  Status consumed = p->delivery->ConsumeCopy(std::move(bytes));
  if (consumed.ok()) return Status::Ok();
  Status told =
      Refuse(id, ReasonFor(consumed), "storing delivery " + id + " failed: " + consumed.message());
  EndDelivery(id);
  return told;
}

Status Connection::SendFreedSlots() {
  if (!ring_) return Status::Ok();
  std::vector<uint32_t> freed = ring_->TakeFreed();
  if (freed.empty()) return Status::Ok();
  return SendNow(protocol::SlotsFree{ring_->tag(), std::move(freed)});
}

}  // namespace writ::receiver
