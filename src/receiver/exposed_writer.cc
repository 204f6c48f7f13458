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
  uint8_t* at = claim_->At(offset);
  if (length > 0) std::memset(at, 0, length);
  return at;
}

// Bytes placed in the buffer are only checked; a copy (none is made today: a ring slot
// cannot carry an addressed delivery) is written in place.
Status ExposedWriter::Write(uint64_t offset, std::span<const uint8_t> bytes) {
  WRIT_RETURN_IF_ERROR(InRange(offset, bytes.size()));
  uint8_t* at = claim_->At(offset);
  if (bytes.data() != at && !bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  return Status::Ok();
}

Status ExposedWriter::Read(uint64_t offset, std::span<uint8_t> out) {
  WRIT_RETURN_IF_ERROR(InRange(offset, out.size()));
  if (!out.empty()) std::memcpy(out.data(), claim_->At(offset), out.size());
  return Status::Ok();
}

Result<store::RetentionEvidence> ExposedWriter::Commit(const std::vector<std::string>& receipts) {
  (void)receipts;
  store::RetentionEvidence ev;
  ev.retention = RetentionClass::kVolatile;
  ev.acknowledged_point = "in the application's buffer " + claim_->target() + ", bytes [" +
                          std::to_string(claim_->offset()) + ", " +
                          std::to_string(claim_->offset() + claim_->bytes()) + ")";
  ev.promise_after_failure =
      "none from writ: the application owns the buffer and decides how long the bytes stay; "
      "they are lost with the receiving process";
  ev.evidence = "written in place by the sender's remote writes, digested where they landed";
  return ev;
}

}  // namespace writ::receiver
