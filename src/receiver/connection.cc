#include "receiver/connection.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "receipt/signing.h"
#include "receiver/admission.h"
#include "receiver/held_delivery_writer.h"
#include "receiver/out_dir.h"
#include "receiver/peer_uid.h"
#include "receiver/receiver_receipts.h"

namespace writ::receiver {
namespace {

using protocol::RefuseReason;
using namespace std::chrono_literals;

RefuseReason ReasonFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kRefused: return RefuseReason::kSpace;
    case ErrorCode::kRetention:
    case ErrorCode::kIo: return RefuseReason::kRetention;
    case ErrorCode::kValidation: return RefuseReason::kValidation;
    default: return RefuseReason::kInternal;
  }
}

}  // namespace

Connection::Connection(ReceiverCore& core, protocol::ControlChannel channel)
    : core_(core), channel_(std::move(channel)), started_(Clock::now()) {
  // Until senders authenticate, a sender is its host.
  const std::string& peer = channel_.peer();
  sender_ = peer.substr(0, peer.rfind(':'));
  idle_since_ns_ = started_.time_since_epoch().count();
}

Connection::~Connection() { EndDelivery(); }

std::optional<Connection::Clock::time_point> Connection::idle_since() const {
  const int64_t ns = idle_since_ns_.load();
  if (ns == 0) return std::nullopt;
  return Clock::time_point(Clock::duration(ns));
}

void Connection::Tell(const std::string& line) const {
  if (core_.options.on_connection_event) core_.options.on_connection_event(line);
}

bool Connection::Start() {
  auto inbox = Inbox::Create();
  if (!inbox.ok()) return false;
  inbox_ = *inbox;
  protocol::Hello hello;
  hello.provider = core_.node->provider().name();
  hello.fabric_address = core_.fabric_address;
  hello.receiver_id = core_.issuer;
  return channel_.Send(hello).ok();
}

void Connection::Run() {
  if (!Start()) {
    MarkFinished();
    return;
  }
  for (;;) {
    if (peer_gone_ && !delivery_) break;
    // Woken by a message, a notification, or the next deadline of a timeout.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(NextDeadline() - Clock::now());
    // While the receiver shuts down, its phase is looked at often (nothing else wakes us).
    const int64_t most = core_.shutdown.begun() ? 50 : 500;
    const int wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, most));
    pollfd fds[2] = {{peer_gone_ ? -1 : channel_.fd(), POLLIN, 0}, {inbox_->event_fd(), POLLIN, 0}};
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    bool close = false;
    Status status = ApplyNotifications();
    if (status.ok() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      status = ReadMessages(close);
    }
    if (status.ok() && !close && delivery_) status = Advance();
    if (status.ok() && !close) status = CheckTimeouts(close);
    if (status.ok() && !close) status = ObserveShutdown(close);
    if (!status.ok() && delivery_) {
      Tell("delivery " + delivery_->announce().delivery_id + " aborted: " + status.message());
    }
    if (!status.ok() || close) break;
  }
  EndDelivery();
  if (sender_peer_) (void)core_.node->RemovePeer(*sender_peer_);
  core_.pool->ForgetWaiter(inbox_->event_fd());
  channel_.Shutdown();
  MarkFinished();
}

void Connection::MarkFinished() {
  finished_ = true;
  core_.shutdown.NoteConnectionEnded();
}

Status Connection::ReadMessages(bool& close) {
  // Only what has arrived: a frame sent a byte at a time never holds this thread, and its
  // bytes are kept for the next call (the timeouts bound how long that may go on).
  Status status;
  auto message = channel_.Receive(0ms);
  while (message.ok() && status.ok()) {
    last_message_ = Clock::now();
    status = HandleMessage(*message);
    if (status.ok()) message = channel_.Receive(0ms);
  }
  if (!status.ok() || message.ok()) return status;
  const ErrorCode code = message.status().code();
  if (code == ErrorCode::kTimeout) return Status::Ok();
  if (code == ErrorCode::kTransport && delivery_ && delivery_->commit_seen) {
    peer_gone_ = true;  // finish the committed delivery without the sender
    return Status::Ok();
  }
  if (code == ErrorCode::kMalformed || code == ErrorCode::kUnsupported) {
    // Name what was wrong, then drop the connection: its stream can't be trusted.
    (void)channel_.Send(protocol::Refuse{delivery_ ? delivery_->announce().delivery_id : "",
                                         RefuseReason::kMalformed, message.status().message()});
  }
  if (delivery_) {
    Tell("delivery " + delivery_->announce().delivery_id +
         " aborted: " + message.status().message());
  }
  close = true;
  return Status::Ok();
}

Status Connection::HandleMessage(const protocol::Message& message) {
  if (const auto* m = std::get_if<protocol::Announce>(&message)) return OnAnnounce(*m);
  if (const auto* m = std::get_if<protocol::Commit>(&message)) return OnCommit(*m);
  if (const auto* m = std::get_if<protocol::Query>(&message)) return OnQuery(*m);
  if (const auto* m = std::get_if<protocol::Abort>(&message)) {
    if (delivery_ && m->delivery_id == delivery_->announce().delivery_id) EndDelivery();
    return Status::Ok();
  }
  return Refuse("", RefuseReason::kMalformed,
                std::string("a receiver does not accept '") +
                    std::string(protocol::MessageTypeName(message)) + "' messages");
}

Status Connection::Send(const protocol::Message& message) {
  // A sender that committed and left (e.g. --until transport) still gets its delivery
  // validated and retained; there is just nobody to tell.
  if (peer_gone_) return Status::Ok();
  Status sent = channel_.Send(message);
  if (sent.ok() || sent.code() != ErrorCode::kTransport || !delivery_) return sent;
  // The sender may have committed and closed before this receiver read the close (or
  // even the commit): a commit still buffered counts, and then the delivery goes on.
  for (auto m = channel_.Receive(0ms); m.ok(); m = channel_.Receive(0ms)) {
    const auto* commit = std::get_if<protocol::Commit>(&*m);
    if (commit != nullptr && commit->delivery_id == delivery_->announce().delivery_id &&
        !admission::CommitUsable(delivery_->announce(), *commit, core_.issuer)) {
      TakeCommit(*commit);
    }
  }
  if (!delivery_->commit_seen) return sent;
  peer_gone_ = true;
  return Status::Ok();
}

Status Connection::Refuse(const std::string& id, RefuseReason reason, const std::string& detail) {
  return Send(protocol::Refuse{id, reason, detail});
}

Result<std::string> Connection::Sign(Receipt receipt) const {
  return receipt::SignReceiptToJson(receipt, *core_.identity);
}

Status Connection::SendReceipt(const Receipt& receipt) {
  WRIT_ASSIGN_OR_RETURN(std::string json, Sign(receipt));
  receipts_.push_back(json);
  return Send(protocol::Receipt{receipt.delivery.id, std::move(json)});
}

// Admission: the checks of admission.h in order, the first refusal ending it, then the
// claims; what passes holds them in an AdmittedDelivery for as long as the delivery lasts.
Status Connection::OnAnnounce(const protocol::Announce& a) {
  if (auto refusal = admission::NotShuttingDown(a, core_.shutdown.begun())) return Send(*refusal);
  const std::string* in_progress = delivery_ ? &delivery_->announce().delivery_id : nullptr;
  if (auto refusal = admission::OneAtATime(a, in_progress)) return Send(*refusal);
  if (auto refusal = CheckSender(a)) return Send(*refusal);
  if (auto refusal = CheckRequest(a)) return Send(*refusal);
  auto held = core_.store->LookupVerified(a.delivery_id);
  if (auto refusal = admission::StoreLookedUp(a, held.status())) return Send(*refusal);
  const bool redelivery = held->has_value();
  if (redelivery) {
    if (auto refusal = admission::SameContentAsHeld(a, **held)) return Send(*refusal);
    if (auto refusal = admission::NoWeakerThanHeld(a, **held)) return Send(*refusal);
    // Only an announced digest can be answered from the store: without one, the bytes
    // move and the commit's digest is compared after validation.
    if (!a.digest.empty() && admission::HeldForThisSender(**held, identity_)) {
      // The same authenticated sender, the same content: the existing receipts, without
      // moving the bytes again.
      for (const auto& json : (*held)->receipts) {
        WRIT_RETURN_IF_ERROR(Send(protocol::Receipt{a.delivery_id, json}));
      }
      return Status::Ok();
    }
    // Anyone else proves it holds the bytes by sending them.
  }
  auto admitted = AdmittedDelivery::Claim(core_, a, sender_);
  if (auto* refusal = std::get_if<protocol::Refuse>(&admitted)) return Send(*refusal);
  return BeginDelivery(a, std::move(std::get<AdmittedDelivery>(admitted)), redelivery);
}

std::optional<protocol::Refuse> Connection::CheckSender(const protocol::Announce& a) {
  auto admitted = core_.auth.Admit(a, core_.issuer, std::chrono::system_clock::now());
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
  if (core_.node->kind() == fabric::EndpointKind::kRdm && !a.sender_fabric_address.empty() &&
      !sender_peer_) {
    // Without it, the sender still writes (shm learns its name on first contact) but is
    // never forgotten: after 256 senders an shm endpoint takes no new writer.
    auto peer = core_.node->AddPeer(a.sender_fabric_address);
    if (auto refusal = admission::SenderAddressUsable(a, peer.status())) return refusal;
    sender_peer_ = *peer;
  }
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

// Opens the store's writer; the delivery then holds `admitted` until it ends.
Status Connection::BeginDelivery(const protocol::Announce& a, AdmittedDelivery admitted,
                                 bool redelivery) {
  // The workers wake this connection's thread, through its inbox, as ranges are digested.
  auto digest = core_.digests->Open(a.rule, a.bytes, [inbox = inbox_] { inbox->Wake(); });
  store::DeliveryMeta meta{a.delivery_id, a.bytes,   a.chunk_size,    a.rule,
                           a.digest,      identity_, a.region_lengths};
  Result<std::unique_ptr<store::PayloadWriter>> writer =
      !digest.ok() ? Result<std::unique_ptr<store::PayloadWriter>>(digest.status())
      : redelivery ? Result<std::unique_ptr<store::PayloadWriter>>(
                         std::make_unique<HeldDeliveryWriter>(*core_.store, a.delivery_id))
                   : core_.store->Begin(meta, a.retention);
  if (!writer.ok()) {
    return Refuse(a.delivery_id, ReasonFor(writer.status()), writer.status().message());
  }
  delivery_ =
      std::make_unique<InboundDelivery>(a, std::move(digest).value(), std::move(writer).value());
  delivery_->redelivery = redelivery;
  delivery_->serial = core_.next_delivery_serial.fetch_add(1);
  admitted_.emplace(std::move(admitted));
  receipts_.clear();
  idle_since_ns_ = 0;
  last_progress_ = Clock::now();
  window_wait_since_.reset();
  return Status::Ok();
}

Status Connection::OnCommit(const protocol::Commit& c) {
  if (!delivery_ || delivery_->announce().delivery_id != c.delivery_id) {
    return Refuse(c.delivery_id, RefuseReason::kUnknownDelivery,
                  "commit for " + c.delivery_id + ", which is not in progress on this connection");
  }
  if (auto refusal = admission::CommitUsable(delivery_->announce(), c, core_.issuer)) {
    EndDelivery();
    return Send(*refusal);
  }
  TakeCommit(c);
  last_progress_ = Clock::now();
  return Status::Ok();
}

// A usable commit: its digest is the one the bytes must match when none was announced.
void Connection::TakeCommit(const protocol::Commit& c) {
  delivery_->commit_seen = true;
  if (delivery_->digest_known()) return;
  delivery_->AdoptCommittedDigest(c.digest);
  delivery_->writer().SetDigest(c.digest);
}

Status Connection::OnQuery(const protocol::Query& q) {
  using json = nlohmann::json;
  auto admitted = core_.auth.AdmitQuery(q, core_.issuer, std::chrono::system_clock::now());
  if (!admitted.ok()) {
    return Refuse(q.delivery_id, RefuseReason::kAuth, admitted.status().message());
  }
  auto held = core_.store->LookupVerified(q.delivery_id);
  json answer{{"id", q.delivery_id}};
  if (!held.ok() || !held->has_value()) {
    answer["state"] = "unknown";
  } else {
    const store::RetainedDelivery& d = **held;
    answer["state"] = "retained";
    answer["retention"] = writ::RetentionName(d.retention);
    answer["bytes"] = d.meta.bytes;
    answer["rule"] = writ::RuleName(d.meta.rule);
    answer["digest"] = writ::ToHex(d.meta.digest);
    answer["receipts"] = json::array();
    for (const auto& r : d.receipts) {
      // Stored by this receiver, so JSON; should one not parse, it is passed on as text
      // rather than ending the process with an exception.
      json parsed = json::parse(r, nullptr, /*allow_exceptions=*/false);
      answer["receipts"].push_back(parsed.is_discarded() ? json(r) : std::move(parsed));
    }
  }
  return Send(protocol::QueryAnswer{q.delivery_id, answer.dump()});
}

Status Connection::ApplyNotifications() {
  notifications_.clear();
  inbox_->Drain(notifications_);
  if (!delivery_) return Status::Ok();  // late notifications of an ended delivery
  if (!notifications_.empty()) last_progress_ = Clock::now();
  for (uint32_t value : notifications_) {
    Status s = delivery_->OnNotification(static_cast<uint16_t>(value >> 16),
                                         static_cast<uint16_t>(value & 0xFFFF));
    if (s.code() == ErrorCode::kMalformed) {
      const std::string id = delivery_->announce().delivery_id;
      EndDelivery();
      return Refuse(id, RefuseReason::kMalformed, s.message());
    }
  }
  return Status::Ok();
}

void Connection::Revoke(LiveWindow& window) {
  (void)window.region.Close();  // revoke first: no write may land after release
  core_.router.Unbind(window.tag);
  // A window placed in the store's memory exposed none of the pool's bytes.
  const bool pooled = window.data == core_.pool->data(window.pool_index);
  core_.pool->Release(window.pool_index, pooled ? window.length : 0);
  window.slot.reset();  // given back now: a re-grant may follow before `window` ends
}

// Grants windows while the delivery needs them and the pool and limits allow.
Status Connection::GrantWindows() {
  InboundDelivery& d = *delivery_;
  while (d.NeedsWindow(core_.options.windows_per_delivery)) {
    auto slot = Reservation::Take(core_, sender_, SenderUsage::kWindows);
    if (!slot) {
      window_wait_why_ = "sender " + sender_ + " holds its limit of " +
                         std::to_string(core_.options.max_windows_per_sender) +
                         " windows in its other deliveries";
      break;
    }
    auto window = core_.pool->TryAcquire(inbox_->event_fd(), d.window_count() > 0, d.serial);
    if (!window) {
      window_wait_why_ = "all " + std::to_string(core_.pool->count()) +
                         " windows of this receiver are granted to deliveries in progress";
      break;  // woken through the inbox when one is released
    }
    auto tag = core_.router.Bind(inbox_);
    if (!tag) {
      core_.pool->Release(window->index, 0);
      window_wait_why_ = "no notification tag is free";
      break;
    }
    WRIT_RETURN_IF_ERROR(GrantOne(*window, *tag, std::move(*slot)));
    if (!delivery_) return Status::Ok();
  }
  // The window wait runs while the delivery holds none; a grant ends it.
  if (d.window_count() > 0 || !d.NeedsWindow(core_.options.windows_per_delivery)) {
    window_wait_since_.reset();
  } else if (!window_wait_since_) {
    window_wait_since_ = Clock::now();
  }
  return Status::Ok();
}

// One window (pool window `window`, notification tag `tag`, its place in the sender's limit
// `slot`) registered and granted.
Status Connection::GrantOne(const WindowPool::Window& window, uint16_t tag, Reservation slot) {
  InboundDelivery& d = *delivery_;
  const std::string id = d.announce().delivery_id;  // a copy: EndDelivery() frees the announce
  LiveWindow live;
  live.tag = tag;
  live.pool_index = window.index;
  live.slot.emplace(std::move(slot));
  live.first_chunk = d.next_grant_chunk();
  live.chunk_count = d.ChunksForWindow(core_.pool->window_bytes());
  live.length = d.BytesForChunks(live.first_chunk, live.chunk_count);
  // Where the store can take the bytes in place (memory-backed volatile retention), the
  // window is the store's own memory and consuming it copies nothing; the pool's window
  // then only counts against the limit of windows in flight. Either way the store's
  // capacity for these bytes is taken now, as the window is granted, not at the announce.
  auto placement = d.writer().Placement(live.first_chunk * d.announce().chunk_size, live.length);
  if (placement.ok()) live.data = *placement != nullptr ? *placement : window.data;
  Result<fabric::MemoryRegion> region =
      placement.ok() ? core_.node->Register(live.data, live.length, fabric::Access::kRemoteWrite)
                     : Result<fabric::MemoryRegion>(placement.status());
  if (!region.ok()) {
    core_.router.Unbind(live.tag);
    core_.pool->Release(live.pool_index, 0);
    EndDelivery();
    if (!placement.ok()) {
      return Refuse(id, ReasonFor(placement.status()),
                    "storing delivery " + id + " failed: " + placement.status().message());
    }
    return Refuse(id, RefuseReason::kInternal, region.status().message());
  }
  live.region = std::move(region).value();
  protocol::Grant grant{id,
                        live.tag,
                        live.region.descriptor().base,
                        live.region.descriptor().key,
                        live.length,
                        live.first_chunk,
                        live.chunk_count};
  d.AddWindow(std::move(live));
  last_progress_ = Clock::now();
  WRIT_RETURN_IF_ERROR(Send(grant));
  if (core_.progress != nullptr) core_.progress->Wake();
  return Status::Ok();
}

Status Connection::Advance() {
  InboundDelivery& d = *delivery_;
  const std::string id = d.announce().delivery_id;  // a copy: EndDelivery() frees the announce
  WRIT_RETURN_IF_ERROR(GrantWindows());
  if (!delivery_) return Status::Ok();

  Status consumed = d.Consume();
  if (!consumed.ok()) {
    // The refusal goes out before the windows are revoked, so the sender reads why (e.g. a
    // full disk: exit 6) before any write in flight fails on a revoked window.
    Status told = Refuse(id, ReasonFor(consumed),
                         "storing delivery " + id + " failed: " + consumed.message());
    EndDelivery();
    return told;
  }
  // Only windows the workers are done with go back to the pool (and so to another delivery).
  std::vector<LiveWindow> digested = d.TakeDigested();
  for (auto& window : digested) Revoke(window);
  // Re-grant at once what was just revoked: the sender may be waiting for nothing else.
  if (!digested.empty()) {
    WRIT_RETURN_IF_ERROR(GrantWindows());
    if (!delivery_) return Status::Ok();
  }

  // A receipt names the delivery's digest: without an announced one, it waits for the commit.
  if (d.all_received() && !d.received_receipt_sent && d.digest_known()) {
    d.received_receipt_sent = true;
    WRIT_RETURN_IF_ERROR(SendReceipt(ReceivedReceipt(core_, RefOf(d.announce()), d.chunk_count())));
  }
  if (d.commit_seen && d.all_received() && d.all_consumed() && d.all_digested()) return Finish();
  return Status::Ok();
}

Status Connection::Finish() {
  InboundDelivery& d = *delivery_;
  const protocol::Announce a = d.announce();
  const DeliveryRef ref = RefOf(a);
  const std::vector<uint8_t> computed = d.FinishDigest();
  if (computed != d.expected_digest()) {
    const bool from_commit = d.digest_from_commit;
    EndDelivery();
    // Nothing computed over the received bytes goes back to the peer: a digest of what a
    // window held would let a sender that never wrote read it out, a probe at a time.
    return Refuse(a.delivery_id, RefuseReason::kValidation,
                  "validation failed: the " + std::to_string(a.bytes) + " bytes received for " +
                      a.delivery_id + " do not match the " +
                      (from_commit ? "committed " : "announced ") +
                      std::string(writ::RuleName(a.rule)) + " digest");
  }
  WRIT_RETURN_IF_ERROR(SendReceipt(ValidatedReceipt(core_, ref)));
  if (core_.options.processing) {
    const ProcessingStep& step = *core_.options.processing;
    store::PayloadWriter& writer = d.writer();
    DeliveryView view{
        a.delivery_id, a.bytes, ref.digest,
        [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); },
        [this] { return core_.shutdown.aborting(); }};
    Status ran = step.run(view);
    if (!ran.ok()) {
      EndDelivery();
      if (core_.shutdown.aborting()) return AbortForShutdown(a.delivery_id);
      return Refuse(a.delivery_id, RefuseReason::kInternal,
                    "processing step '" + step.name + "' failed: " + ran.message());
    }
    WRIT_RETURN_IF_ERROR(SendReceipt(ProcessedReceipt(core_, ref, step.name)));
  }
  if (Status out = PublishOut(a); !out.ok()) return RefuseOut(a.delivery_id, out);
  if (d.redelivery) return AnswerFromStore(a);
  auto evidence = d.writer().Commit(receipts_);
  if (!evidence.ok()) {
    EndDelivery();
    return Refuse(a.delivery_id, ReasonFor(evidence.status()),
                  "retention failed: " + evidence.status().message());
  }
  WRIT_ASSIGN_OR_RETURN(const std::string json, Sign(RetainedReceipt(core_, ref, *evidence)));
  std::vector<std::string> issued = receipts_;
  issued.push_back(json);
  if (Status out = PublishOutReceiptsOf(a, issued); !out.ok()) {
    return RefuseOut(a.delivery_id, out);
  }
  // The retained receipt is recorded with the delivery before it is sent; if that fails the
  // class was not reached (the store has undone the commit), and the sender is told so.
  if (Status recorded = core_.store->AppendReceipt(a.delivery_id, json); !recorded.ok()) {
    EndDelivery();
    return Refuse(a.delivery_id, ReasonFor(recorded), "retention failed: " + recorded.message());
  }
  EndDelivery();
  core_.shutdown.NoteDrained(a.delivery_id);
  return Send(protocol::Receipt{a.delivery_id, json});
}

// A re-delivery validated: the store retains these very bytes (same id, size, rule and
// digest) already, so its retention receipts are the answer; nothing is stored twice.
Status Connection::AnswerFromStore(const protocol::Announce& a) {
  auto held = core_.store->LookupVerified(a.delivery_id);
  EndDelivery();
  if (held.ok() && held->has_value() && (*held)->meta.digest != a.digest) {
    // Only possible without an announced digest: the committed one names other content.
    return Refuse(a.delivery_id, RefuseReason::kConflictingId,
                  "delivery " + a.delivery_id + " is already retained with other content");
  }
  if (!held.ok() || !held->has_value()) {
    return Refuse(a.delivery_id, RefuseReason::kRetention,
                  "delivery " + a.delivery_id +
                      " was validated but is no longer retained here (removed meanwhile); "
                      "send it again");
  }
  if (Status out = PublishOutReceiptsOf(a, (*held)->receipts); !out.ok()) {
    return RefuseOut(a.delivery_id, out);
  }
  core_.shutdown.NoteDrained(a.delivery_id);
  for (const auto& json : (*held)->receipts) {
    auto receipt = ReceiptFromJson(json);
    if (receipt.ok() && receipt->rung == ReceiptRung::kRetained) {
      WRIT_RETURN_IF_ERROR(Send(protocol::Receipt{a.delivery_id, json}));
    }
  }
  return Status::Ok();
}

Status Connection::PublishOut(const protocol::Announce& a) {
  if (core_.options.out_dir.empty()) return Status::Ok();
  store::PayloadWriter& writer = delivery_->writer();
  return PublishOutPayload(
      core_.options.out_dir, a.delivery_id, a.bytes, a.retention == RetentionClass::kPowerLoss,
      [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); });
}

Status Connection::PublishOutReceiptsOf(const protocol::Announce& a,
                                        const std::vector<std::string>& receipts) {
  if (core_.options.out_dir.empty()) return Status::Ok();
  return PublishOutReceipts(core_.options.out_dir, a.delivery_id, receipts,
                            a.retention == RetentionClass::kPowerLoss);
}

// No receipt claims more than happened: an output that failed refuses the delivery.
Status Connection::RefuseOut(const std::string& id, const Status& failed) {
  EndDelivery();
  const bool conflict = failed.code() == ErrorCode::kRefused;
  return Refuse(id, conflict ? RefuseReason::kConflictingId : RefuseReason::kRetention,
                "output failed: " + failed.message());
}

void Connection::EndDelivery() {
  if (!delivery_) return;
  for (auto& window : delivery_->TakeWindows()) Revoke(window);
  delivery_.reset();  // an uncommitted writer discards its bytes
  admitted_.reset();  // then the id and the sender's place are free again
  core_.pool->ForgetWaiter(inbox_->event_fd());  // no longer waits for a window
  window_wait_since_.reset();
  // The connection is idle from now: the idle timeout counts from the end of its delivery.
  last_message_ = Clock::now();
  idle_since_ns_ = last_message_->time_since_epoch().count();
}

namespace {

std::string Ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

}  // namespace

Connection::Clock::time_point Connection::NextDeadline() const {
  const ReceiverOptions& opt = core_.options;
  if (!delivery_) {
    return last_message_ ? *last_message_ + opt.idle_timeout : started_ + opt.handshake_timeout;
  }
  // The same choice as CheckDeliveryTimeouts: a delivery waiting for its first window is
  // bounded by the window wait alone.
  if (window_wait_since_ && delivery_->window_count() == 0) {
    return *window_wait_since_ + opt.window_wait_timeout;
  }
  return last_progress_ + opt.grant_unused_timeout;
}

Status Connection::CheckTimeouts(bool& close) {
  const ReceiverOptions& opt = core_.options;
  const auto now = Clock::now();
  if (delivery_) return CheckDeliveryTimeouts(now);
  std::string why;
  if (!last_message_ && now - started_ >= opt.handshake_timeout) {
    why = "no announce or query within the handshake timeout of " + Ms(opt.handshake_timeout);
  } else if (last_message_ && now - *last_message_ >= opt.idle_timeout) {
    why = "idle (no delivery in progress, no message) for the idle timeout of " +
          Ms(opt.idle_timeout);
  }
  if (why.empty()) return Status::Ok();
  close = true;
  Tell("connection from " + channel_.peer() + " closed: " + why);
  return Refuse("", RefuseReason::kLimit, "connection closed: " + why);
}

// A delivery ends when its granted windows stay unused, when it waits too long for a
// window, or when every chunk landed and the commit does not come.
Status Connection::CheckDeliveryTimeouts(Clock::time_point now) {
  const ReceiverOptions& opt = core_.options;
  const InboundDelivery& d = *delivery_;
  const std::string id = d.announce().delivery_id;
  std::string why;
  if (window_wait_since_ && d.window_count() == 0) {
    if (now - *window_wait_since_ >= opt.window_wait_timeout) {
      why = "no window available for " + Ms(opt.window_wait_timeout) +
            " (the window wait "
            "timeout): " +
            window_wait_why_ + "; try again later";
    }
  } else if (now - last_progress_ >= opt.grant_unused_timeout) {
    why = d.window_count() > 0 ? "its granted window(s) saw no chunk land for " +
                                     Ms(opt.grant_unused_timeout) + " (the grant-unused timeout)"
                               : "every chunk landed but no commit came within " +
                                     Ms(opt.grant_unused_timeout) + " (the grant-unused timeout)";
    if (peer_gone_) why += "; the sender had committed and closed its connection";
  }
  if (why.empty()) return Status::Ok();
  Tell("delivery " + id + " aborted: " + why);
  // Told before the windows are revoked, so the sender reads why before a write fails.
  Status told = Refuse(id, RefuseReason::kLimit, "delivery " + id + " aborted: " + why);
  EndDelivery();
  return told;
}
}  // namespace writ::receiver
