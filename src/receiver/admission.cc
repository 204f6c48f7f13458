#include "receiver/admission.h"

#include <algorithm>

#include "common/hex.h"
#include "protocol/codec.h"
#include "receipt/identity.h"
#include "receiver/receiver_core.h"

namespace writ::receiver::admission {

using protocol::Announce;
using protocol::RefuseReason;

Verdict NotShuttingDown(const Announce& a, bool shutdown_begun) {
  if (!shutdown_begun) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kShuttingDown,
                          "the receiver is shutting down and admits no new delivery; send " +
                              a.delivery_id + " again once it is back"};
}

Verdict FabricProgressing(const Announce& a, const Status& fabric) {
  if (fabric.ok()) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kInternal,
                          "this receiver's fabric no longer makes progress, so no write to it "
                          "can complete; it admits nothing until it is restarted (" +
                              fabric.message() + ")"};
}

Verdict WithinInFlightLimit(const Announce& a, size_t in_progress, uint32_t limit) {
  if (in_progress < limit) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kLimit,
                          "this connection already has " + std::to_string(in_progress) +
                              " deliveries in progress, its limit (max_in_flight " +
                              std::to_string(limit) + " in the hello)"};
}

Verdict NotInProgressHere(const Announce& a, bool in_progress_here) {
  if (!in_progress_here) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kConflictingId,
                          "delivery " + a.delivery_id +
                              " is already in progress on this connection; announce an id once "
                              "its delivery has ended"};
}

Verdict SignedAsAllowed(const Announce& a, const Status& admitted) {
  if (admitted.ok()) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kAuth, admitted.message()};
}

protocol::Refuse ConnectionLimitReached(const Announce& a, const std::string& key, uint32_t limit) {
  return protocol::Refuse{
      a.delivery_id, RefuseReason::kLimit,
      "sender " + key + " already has " + std::to_string(limit) + " connections open"};
}

Verdict SameUserOverUncheckedProvider(const Announce& a, const std::string& provider,
                                      const Result<uid_t>& peer_uid, uid_t own_uid) {
  if (peer_uid.ok() && *peer_uid == own_uid) return std::nullopt;
  return protocol::Refuse{
      a.delivery_id, RefuseReason::kAuth,
      "provider " + provider +
          " does not check memory keys, so this receiver admits only its own user (uid " +
          std::to_string(own_uid) + ") over it; the sender is " +
          (peer_uid.ok() ? "uid " + std::to_string(*peer_uid) : peer_uid.status().message())};
}

Verdict SenderAddressUsable(const Announce& a, const Status& added) {
  if (added.ok()) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kMalformed,
                          "sender fabric address: " + added.message()};
}

Verdict WithinSizeLimit(const Announce& a, uint64_t max_delivery_bytes) {
  if (a.bytes <= max_delivery_bytes) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kOversize,
                          "delivery of " + std::to_string(a.bytes) +
                              " bytes exceeds this receiver's limit of " +
                              std::to_string(max_delivery_bytes) + " bytes"};
}

Verdict ChunkFitsWindow(const Announce& a, uint64_t window_bytes) {
  if (a.chunk_size <= window_bytes) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kOversize,
                          "chunk size " + std::to_string(a.chunk_size) +
                              " exceeds this receiver's window of " + std::to_string(window_bytes) +
                              " bytes"};
}

Verdict ProcessingOffered(const Announce& a, bool processing) {
  if (a.until != Rung::kProcessed || processing) return std::nullopt;
  return protocol::Refuse{
      a.delivery_id, RefuseReason::kUnsupported,
      "this receiver registers no processing step, so it never reports 'processed'"};
}

Verdict RetentionOffered(const Announce& a, bool offered) {
  if (offered) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kRetention,
                          std::string("this receiver does not offer ") +
                              std::string(writ::RetentionName(a.retention)) +
                              " retention (without --data only volatile is offered)"};
}

Verdict StoreLookedUp(const Announce& a, const Status& lookup) {
  if (lookup.ok()) return std::nullopt;
  return protocol::Refuse{a.delivery_id, RefuseReason::kInternal, lookup.message()};
}

Verdict SameContentAsHeld(const Announce& a, const store::RetainedDelivery& held) {
  // Without an announced digest, the commit's is compared once the bytes were validated.
  const bool digest_agrees = a.digest.empty() || held.meta.digest == a.digest;
  // A scatter-gather delivery's region table is part of what is held (ReadRegion).
  if (digest_agrees && held.meta.bytes == a.bytes && held.meta.rule == a.rule &&
      held.meta.region_lengths == a.region_lengths) {
    return std::nullopt;
  }
  // Neither its size nor its digest (nor its regions): they describe another delivery.
  return protocol::Refuse{a.delivery_id, RefuseReason::kConflictingId,
                          "delivery " + a.delivery_id + " is already retained with other content"};
}

bool UpgradesHeld(const Announce& a, const store::RetainedDelivery& held) {
  return held.retention < a.retention;
}

bool HeldForThisSender(const store::RetainedDelivery& held, const std::string& identity) {
  // Only an authenticated sender: anyone else proves it holds the bytes by sending them.
  return !held.meta.sender.empty() && held.meta.sender == identity;
}

RefuseReason ReasonFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kRefused: return RefuseReason::kSpace;
    case ErrorCode::kRetention:
    case ErrorCode::kIo: return RefuseReason::kRetention;
    case ErrorCode::kValidation: return RefuseReason::kValidation;
    default: return RefuseReason::kInternal;
  }
}

Verdict CommitUsable(const Announce& a, const protocol::Commit& c, const std::string& receiver_id) {
  if (a.sender_key.empty() != c.signature.empty()) {
    return protocol::Refuse{
        a.delivery_id, RefuseReason::kAuth,
        a.sender_key.empty() ? "auth: a signed commit for an unsigned announce"
                             : "auth: the commit of a signed announce must be signed by its key"};
  }
  if (!a.sender_key.empty()) {
    receipt::PublicKey key{};
    receipt::Signature signature{};
    std::copy(a.sender_key.begin(), a.sender_key.end(), key.begin());  // sizes: validate.cc
    std::copy(c.signature.begin(), c.signature.end(), signature.begin());
    if (!receipt::VerifySignature(key, protocol::CommitSigningBytes(c, receiver_id, a.nonce),
                                  signature)) {
      return protocol::Refuse{
          a.delivery_id, RefuseReason::kAuth,
          "auth: the commit's signature does not verify for key " + receipt::KeyId(key)};
    }
  }
  const std::string rule(writ::RuleName(a.rule));
  if (c.digest.size() != DigestSize(a.rule)) {
    return protocol::Refuse{a.delivery_id, RefuseReason::kMalformed,
                            "commit.digest: " + std::to_string(c.digest.size()) + " bytes, " +
                                rule + " needs " + std::to_string(DigestSize(a.rule))};
  }
  if (a.digest.empty() || a.digest == c.digest) return std::nullopt;
  // Both are the sender's own statements, not values computed over received bytes.
  return protocol::Refuse{a.delivery_id, RefuseReason::kValidation,
                          "the commit's " + rule + " digest " + writ::ToHex(c.digest) +
                              " is not the announced " + writ::ToHex(a.digest)};
}

protocol::Refuse IdInProgressElsewhere(const Announce& a) {
  return protocol::Refuse{a.delivery_id, RefuseReason::kConflictingId,
                          "delivery " + a.delivery_id + " is in progress on another connection"};
}

protocol::Refuse DeliveryLimitReached(const Announce& a, const std::string& sender,
                                      uint32_t limit) {
  return protocol::Refuse{
      a.delivery_id, RefuseReason::kLimit,
      "sender " + sender + " already has " + std::to_string(limit) + " deliveries in progress"};
}

}  // namespace writ::receiver::admission

namespace writ::receiver {

std::variant<AdmittedDelivery, protocol::Refuse> AdmittedDelivery::Claim(
    ReceiverCore& core, const protocol::Announce& a, const std::string& sender) {
  auto id = IdClaim::Take(core, a.delivery_id);
  if (!id) return admission::IdInProgressElsewhere(a);
  auto place = Reservation::Take(core, sender, SenderUsage::kDeliveries);
  if (!place) {
    return admission::DeliveryLimitReached(a, sender, core.options.max_deliveries_per_sender);
  }
  return AdmittedDelivery(std::move(*id), std::move(*place));
}

}  // namespace writ::receiver
