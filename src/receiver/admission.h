// Admission of an announce, a small check at a time (docs/architecture.md, "Admission").
// Each check returns nothing (go on) or the refusal that ends admission, with the reason and
// the message the sender reads; Connection::OnAnnounce runs them in order. An announce that
// passes them all ends in an AdmittedDelivery, which holds what the delivery claimed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "protocol/messages.h"
#include "receiver/reservation.h"
#include "store/store.h"

namespace writ::receiver::admission {

using Verdict = std::optional<protocol::Refuse>;

// The receiver: it admits nothing once its shutdown has begun.
Verdict NotShuttingDown(const protocol::Announce& a, bool shutdown_begun);
// Nor once its fabric stopped making progress (`fabric`: FabricHealth::status()).
Verdict FabricProgressing(const protocol::Announce& a, const Status& fabric);

// The connection: at most `limit` deliveries in progress at once (the hello's
// `max_in_flight`; `in_progress` of them now), and never the same id twice at once.
Verdict WithinInFlightLimit(const protocol::Announce& a, size_t in_progress, uint32_t limit);
Verdict NotInProgressHere(const protocol::Announce& a, bool in_progress_here);

// The sender: its signature and --allow (SenderAuth::Admit's status), its limit of
// connections, its user over a provider that checks no memory keys, its fabric address.
Verdict SignedAsAllowed(const protocol::Announce& a, const Status& admitted);
protocol::Refuse ConnectionLimitReached(const protocol::Announce& a, const std::string& key,
                                        uint32_t limit);
Verdict SameUserOverUncheckedProvider(const protocol::Announce& a, const std::string& provider,
                                      const Result<uid_t>& peer_uid, uid_t own_uid);
Verdict SenderAddressUsable(const protocol::Announce& a, const Status& added);

// The request: what this receiver offers.
Verdict WithinSizeLimit(const protocol::Announce& a, uint64_t max_delivery_bytes);
Verdict ChunkFitsWindow(const protocol::Announce& a, uint64_t window_bytes);
Verdict ProcessingOffered(const protocol::Announce& a, bool processing);
Verdict RetentionOffered(const protocol::Announce& a, bool offered);

// The id against what the store already holds: a lookup that failed, other content, a
// weaker class. Held for the same authenticated sender, it is answered from the store.
Verdict StoreLookedUp(const protocol::Announce& a, const Status& lookup);
Verdict SameContentAsHeld(const protocol::Announce& a, const store::RetainedDelivery& held);
// An id held in a weaker class than asked is upgraded, not refused: the bytes move again,
// are validated, and their stronger copy takes the place of the weaker one.
bool UpgradesHeld(const protocol::Announce& a, const store::RetainedDelivery& held);
bool HeldForThisSender(const store::RetainedDelivery& held, const std::string& identity);

// The refusal reason for a failed store or validation step.
protocol::RefuseReason ReasonFor(const Status& status);

// The commit: signed by the announce's key when the announce was signed (over
// CommitSigningBytes for `receiver_id`), its digest fits the rule and, when the announce
// carried one, equals it.
Verdict CommitUsable(const protocol::Announce& a, const protocol::Commit& c,
                     const std::string& receiver_id);

// The claims: the id free on every connection, the sender below its limit of deliveries.
protocol::Refuse IdInProgressElsewhere(const protocol::Announce& a);
protocol::Refuse DeliveryLimitReached(const protocol::Announce& a, const std::string& sender,
                                      uint32_t limit);

}  // namespace writ::receiver::admission

namespace writ::receiver {

// An admitted delivery's claims: its id (in progress on this connection alone) and its
// place in its sender's limit of deliveries, both given back when this ends, however the
// delivery ends. Nothing releases them by hand.
class AdmittedDelivery {
 public:
  // Both claims, or the refusal naming the one that is taken (and nothing held).
  static std::variant<AdmittedDelivery, protocol::Refuse> Claim(ReceiverCore& core,
                                                                const protocol::Announce& a,
                                                                const std::string& sender);

 private:
  AdmittedDelivery(IdClaim id, Reservation place) : id_(std::move(id)), place_(std::move(place)) {}

  IdClaim id_;
  Reservation place_;
};

}  // namespace writ::receiver
