// A connection's admission of an announce (docs/architecture.md, "Admission"): the checks of
// admission.h in order, the first refusal ending it, then the claims; what passes starts an
// inbound run that holds them for as long as it lasts.
#include <unistd.h>

#include "receiver/admission.h"
#include "receiver/connection.h"
#include "receiver/held_delivery_writer.h"
#include "receiver/peer_uid.h"

namespace writ::receiver {

using admission::ReasonFor;

// An announce refused before it became a run ends no delivery, so it is counted here as one
// refused (writ_deliveries_total{outcome="refused",rung="none"}).
Result<InboundRun*> Connection::OnAnnounce(protocol::Announce&& a, bool bytes_in_slot) {
  const size_t refused_before = refused_.size();
  const bool in_progress = runs_.count(a.delivery_id) > 0;
  const RetentionClass retention = a.retention;
  Result<InboundRun*> started = AdmitAnnounce(std::move(a), bytes_in_slot);
  if (refused_.size() > refused_before && !in_progress && started.ok() && *started == nullptr) {
    core_.metrics.RefusedAtAnnounce(retention);
  }
  return started;
}

Result<InboundRun*> Connection::AdmitAnnounce(protocol::Announce&& a, bool bytes_in_slot) {
  using Started = Result<InboundRun*>;
  const auto refuse = [this](const protocol::Refuse& refusal) -> Started {
    WRIT_RETURN_IF_ERROR(Send(refusal));
    return static_cast<InboundRun*>(nullptr);
  };
  if (auto refusal = admission::NotShuttingDown(a, core_.shutdown.begun())) return refuse(*refusal);
  if (core_.fabric.failed()) {
    if (auto refusal = admission::FabricProgressing(a, core_.fabric.status())) {
      return refuse(*refusal);
    }
  }
  if (auto refusal = admission::NotInProgressHere(a, runs_.count(a.delivery_id) > 0)) {
    return refuse(*refusal);
  }
  const uint32_t limit = std::max<uint32_t>(1, std::min(core_.options.max_deliveries_per_connection,
                                                        core_.options.max_deliveries_per_sender));
  if (auto refusal = admission::WithinInFlightLimit(a, runs_.size(), limit)) {
    return refuse(*refusal);
  }
  if (auto refusal = CheckSender(a)) return refuse(*refusal);
  if (auto refusal = CheckRequest(a)) return refuse(*refusal);
  if (!a.target.empty()) return AdmitAddressed(std::move(a));
  auto held = core_.store->LookupVerified(a.delivery_id);
  if (auto refusal = admission::StoreLookedUp(a, held.status())) return refuse(*refusal);
  const bool held_already = held->has_value();
  const bool upgrade = held_already && admission::UpgradesHeld(a, **held);
  if (held_already) {
    if (auto refusal = admission::SameContentAsHeld(a, **held)) return refuse(*refusal);
    // Only an announced digest can be answered from the store: without one, the bytes
    // move and the commit's digest is compared after validation.
    if (!upgrade && !bytes_in_slot && !a.digest.empty() &&
        admission::HeldForThisSender(**held, identity_)) {
      // The same authenticated sender, the same content: the existing receipts, without
      // moving the bytes again.
      for (const auto& json : (*held)->receipts) outbox_.Add(a.delivery_id, json);
      WRIT_RETURN_IF_ERROR(FlushReceipts());
      return static_cast<InboundRun*>(nullptr);
    }
    // Anyone else proves it holds the bytes by sending them.
  }
  auto admitted = AdmittedDelivery::Claim(core_, a, sender_);
  if (auto* refusal = std::get_if<protocol::Refuse>(&admitted)) return refuse(*refusal);
  // An upgrade is a fresh delivery into the stronger class (docs/retention.md).
  const InboundRun::Held kind = upgrade        ? InboundRun::Held::kUpgrade
                                : held_already ? InboundRun::Held::kRedelivery
                                               : InboundRun::Held::kNo;
  return BeginRun(std::move(a), std::move(std::get<AdmittedDelivery>(admitted)), kind);
}

// An addressed delivery (docs/architecture.md, "Exposed targets"): its range of the target,
// then its claims; writ's store is not consulted (the application's buffer holds it).
Result<InboundRun*> Connection::AdmitAddressed(protocol::Announce&& a) {
  const auto refuse = [&](protocol::RefuseReason reason,
                          std::string detail) -> Result<InboundRun*> {
    WRIT_RETURN_IF_ERROR(Send(protocol::Refuse{a.delivery_id, reason, std::move(detail)}));
    return static_cast<InboundRun*>(nullptr);
  };
  if (a.retention != RetentionClass::kVolatile) {
    return refuse(protocol::RefuseReason::kRetention,
                  "target " + a.target +
                      " is the application's memory: a delivery into it is "
                      "retained volatile only, not " +
                      std::string(RetentionName(a.retention)));
  }
  auto claim = core_.targets.Claim(
      a.target, a.delivery_id,
      TargetRequest{a.target_offset, a.bytes, a.target_pages, a.chunk_size}, inbox_);
  if (!claim.ok()) return refuse(protocol::RefuseReason::kTarget, claim.status().message());
  auto admitted = AdmittedDelivery::Claim(core_, a, sender_);
  if (auto* refusal = std::get_if<protocol::Refuse>(&admitted)) {
    WRIT_RETURN_IF_ERROR(Send(*refusal));
    return static_cast<InboundRun*>(nullptr);
  }
  auto digest = core_.digests->Open(a.rule, a.bytes, [inbox = inbox_] { inbox->Wake(); });
  if (!digest.ok()) return refuse(ReasonFor(digest.status()), digest.status().message());
  auto writer =
      std::make_unique<ExposedWriter>(std::move(claim).value(), a.delivery_id, &core_.metrics);
  ExposedWriter* exposed = writer.get();
  auto delivery =
      std::make_unique<InboundDelivery>(std::move(a), std::move(digest).value(), std::move(writer));
  auto run = std::make_unique<InboundRun>(*this, std::move(delivery),
                                          std::move(std::get<AdmittedDelivery>(admitted)),
                                          InboundRun::Held::kNo);
  run->AddressedTo(exposed);
  InboundRun* started = run.get();
  runs_.emplace(started->id(), std::move(run));
  idle_since_ns_ = 0;
  return started;
}

std::optional<protocol::Refuse> Connection::CheckSender(const protocol::Announce& a) {
  auto admitted = core_.auth.Admit(a, core_.signing_id, std::chrono::system_clock::now());
  if (auto refusal = admission::SignedAsAllowed(a, admitted.status())) return refusal;
  if (auto refusal = CountConnection(a, *admitted)) return refusal;
  identity_ = *admitted;                        // empty: the announce was not signed
  if (!admitted->empty()) sender_ = *admitted;  // limits count per key
  if (!core_.node->provider().checks_remote_keys()) {
    // shm never checks memory keys: any writer could scribble anywhere in this process.
    // The kernel already limits cross-process writes to the same user; writ offers shm
    // only to senders running as the receiver's own user, and says so.
    // The peer of one connection does not change: looked up once (reading /proc/net/tcp
    // took milliseconds on a host with many sockets), for its first announce.
    if (!peer_uid_) peer_uid_ = LoopbackPeerUid(channel_.fd());
    if (auto refusal = admission::SameUserOverUncheckedProvider(a, core_.node->provider().name(),
                                                                *peer_uid_, getuid())) {
      return refusal;
    }
  }
  return CheckSenderAddress(a);
}

// Whom the connection's notifications must come from (NotificationRouter): on RDM the
// sender's endpoint, added to the address vector (or, never forgotten, it would hold an shm
// endpoint's room for one of its 256 writers), on MSG its accepted fabric connection. Until
// an announce names it, no notification counts for the connection's windows.
std::optional<protocol::Refuse> Connection::CheckSenderAddress(const protocol::Announce& a) {
  if (sender_peer_ || a.sender_fabric_address.empty()) return std::nullopt;
  auto peer = core_.node->AddPeer(a.sender_fabric_address);
  if (auto refusal = admission::SenderAddressUsable(a, peer.status())) return refusal;
  sender_peer_ = *peer;
  return std::nullopt;
}

// The connection counts against its key's limit of connections from its first signed
// announce (per address, the accept loop counted it already).
std::optional<protocol::Refuse> Connection::CountConnection(const protocol::Announce& a,
                                                            const std::string& key) {
  if (key.empty() || (connection_slot_ && connection_slot_->sender() == key)) return std::nullopt;
  auto slot = Reservation::Take(core_, key, SenderUsage::kConnections);
  if (!slot) {
    return admission::ConnectionLimitReached(a, key, core_.options.max_connections_per_sender);
  }
  connection_slot_ = std::move(slot);  // a key counted before is given back
  return std::nullopt;
}

std::optional<protocol::Refuse> Connection::CheckRequest(const protocol::Announce& a) const {
  const ReceiverOptions& opt = core_.options;
  if (auto refusal = admission::WithinSizeLimit(a, opt.max_delivery_bytes)) return refusal;
  if (auto refusal = admission::ChunkFitsWindow(a, core_.pool->window_bytes())) return refusal;
  if (auto refusal = admission::ProcessingOffered(a, opt.processing.has_value())) return refusal;
  return admission::RetentionOffered(a, core_.store->Offers(a.retention));
}

// Opens the store's writer; the run then holds `admitted` until it ends.
Result<InboundRun*> Connection::BeginRun(protocol::Announce&& a, AdmittedDelivery admitted,
                                         InboundRun::Held held) {
  // The workers wake this connection's thread, through its inbox, as ranges are digested.
  auto digest = core_.digests->Open(a.rule, a.bytes, [inbox = inbox_] { inbox->Wake(); });
  const bool upgrade = held == InboundRun::Held::kUpgrade;
  store::DeliveryMeta meta{a.delivery_id, a.bytes,   a.chunk_size, a.rule,
                           a.digest,      identity_, upgrade,      a.region_lengths};
  Result<std::unique_ptr<store::PayloadWriter>> writer =
      !digest.ok() ? Result<std::unique_ptr<store::PayloadWriter>>(digest.status())
      : held == InboundRun::Held::kRedelivery
          ? Result<std::unique_ptr<store::PayloadWriter>>(
                std::make_unique<HeldDeliveryWriter>(*core_.store, a.delivery_id))
          : core_.store->Begin(std::move(meta), a.retention);
  if (!writer.ok()) {
    WRIT_RETURN_IF_ERROR(Send(
        protocol::Refuse{a.delivery_id, ReasonFor(writer.status()), writer.status().message()}));
    return static_cast<InboundRun*>(nullptr);
  }
  auto delivery = std::make_unique<InboundDelivery>(std::move(a), std::move(digest).value(),
                                                    std::move(writer).value());
  auto run = std::make_unique<InboundRun>(*this, std::move(delivery), std::move(admitted), held);
  InboundRun* started = run.get();
  runs_.emplace(started->id(), std::move(run));
  idle_since_ns_ = 0;
  return started;
}

}  // namespace writ::receiver
