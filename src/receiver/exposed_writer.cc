#include "receiver/exposed_writer.h"

namespace writ::receiver {

ExposedWriter::~ExposedWriter() { claim_->Report(delivery_id_, validated_, why_); }

Status ExposedWriter::InRange(uint64_t offset, uint64_t length) const {
  if (offset <= claim_->bytes() && length <= claim_->bytes() - offset) return Status::Ok();
  return Status::Internal("bytes [" + std::to_string(offset) + ", +" + std::to_string(length) +
                          ") outside delivery " + delivery_id_ + "'s range of target " +
                          claim_->target());
}

// Cleared before it is registered: a chunk notified but never written then reads zeros, not
// what the application held there, so knowing the digest of bytes already in the buffer is
// not enough to have them validated (docs/security.md, "Exposed targets").
Result<uint8_t*> ExposedWriter::Placement(uint64_t offset, uint64_t length) {
  WRIT_RETURN_IF_ERROR(InRange(offset, length));
  // A window is one registration: it never spans a break in a page list (GrantOne asks
  // ContiguousFrom).
  if (claim_->ContiguousFrom(offset, length) < length) {
    return Status::Internal("bytes [" + std::to_string(offset) + ", +" + std::to_string(length) +
                            ") of delivery " + delivery_id_ + " span a break in its pages of " +
                            "target " + claim_->target());
  }
  uint8_t* at = claim_->At(offset);
  if (length > 0) std::memset(at, 0, length);
  return at;
}

// Bytes placed in the buffer are only checked; a copy (none is made today: a ring slot
// cannot carry an addressed delivery) is written in place.
// Piece by contiguous piece of the buffer (a page list's pages need not be adjacent).
Status ExposedWriter::Write(uint64_t offset, std::span<const uint8_t> bytes) {
  WRIT_RETURN_IF_ERROR(InRange(offset, bytes.size()));
  uint64_t in_place = 0;
  uint64_t copied = 0;
  while (!bytes.empty()) {
    const uint64_t piece = claim_->ContiguousFrom(offset, bytes.size());
    uint8_t* at = claim_->At(offset);
    if (bytes.data() != at) {
      std::memcpy(at, bytes.data(), piece);
      copied += piece;
    } else {
      in_place += piece;
    }
    bytes = bytes.subspan(piece);
    offset += piece;
  }
  if (metrics_ != nullptr) metrics_->ExposedBytes(in_place, copied);
  return Status::Ok();
}

Status ExposedWriter::Read(uint64_t offset, std::span<uint8_t> out) {
  WRIT_RETURN_IF_ERROR(InRange(offset, out.size()));
  while (!out.empty()) {
    const uint64_t piece = claim_->ContiguousFrom(offset, out.size());
    std::memcpy(out.data(), claim_->At(offset), piece);
    out = out.subspan(piece);
    offset += piece;
  }
  return Status::Ok();
}

Result<store::RetentionEvidence> ExposedWriter::Commit(const std::vector<std::string>& receipts) {
  (void)receipts;
  store::RetentionEvidence ev;
  ev.retention = RetentionClass::kVolatile;
  ev.acknowledged_point =
      "in the application's buffer " + claim_->target() + ", " + claim_->Where();
  ev.promise_after_failure =
      "none from writ: the application owns the buffer and decides how long the bytes stay; "
      "they are lost with the receiving process";
  ev.evidence = "written in place by the sender's remote writes, digested where they landed";
  return ev;
}

}  // namespace writ::receiver
