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
#include "receiver/out_files.h"
#include "receiver/peer_uid.h"
#include "receiver/receiver_receipts.h"
#include "receiver/remote_removal.h"
#include "store/lifecycle.h"

namespace writ::receiver {
namespace {

using protocol::RefuseReason;
using namespace std::chrono_literals;

using admission::ReasonFor;

}  // namespace

Connection::Connection(ReceiverCore& core, protocol::ControlChannel channel)
    : core_(core), channel_(std::move(channel)), started_(Clock::now()) {
  // Until senders authenticate, a sender is its host.
  const std::string& peer = channel_.peer();
  sender_ = peer.substr(0, peer.rfind(':'));
  idle_since_ns_ = started_.time_since_epoch().count();
}

Connection::~Connection() { EndAllDeliveries(); }

std::optional<Connection::Clock::time_point> Connection::idle_since() const {
  const int64_t ns = idle_since_ns_.load();
  if (ns == 0) return std::nullopt;
  return Clock::time_point(Clock::duration(ns));
}

void Connection::Tell(const std::string& line) const {
  if (!deliveries_.empty()) end_why_ = line;
  if (core_.options.on_connection_event) core_.options.on_connection_event(line);
}

bool Connection::Start() {
  auto inbox = Inbox::Create();
  if (!inbox.ok()) return false;
  inbox_ = *inbox;
  protocol::Hello hello;
  hello.provider = core_.node->provider().name();
  hello.fabric_address = core_.fabric_address;
  hello.receiver_id = core_.signing_id;
  hello.max_in_flight = std::max<uint32_t>(1, std::min(core_.options.max_deliveries_per_connection,
                                                       core_.options.max_deliveries_per_sender));
  return channel_.Send(hello).ok();
}

void Connection::Run() {
  if (!Start()) {
    MarkFinished();
    return;
  }
  for (;;) {
    if (peer_gone_ && deliveries_.empty()) break;
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
    if (status.ok() && peer_gone_) DropUncommitted();
    if (status.ok() && !close) status = AdvanceAll();
    channel_.Cork();  // the freed slots and every receipt of this pass leave in one write
    if (status.ok()) status = SendFreedSlots();  // before the receipts: the next one may wait
    if (status.ok()) status = FlushReceipts();
    if (Status sent = SendCorked(); status.ok()) status = sent;
    if (status.ok() && !close) status = CheckTimeouts(close);
    if (status.ok() && !close) status = ObserveShutdown(close);
    if (!status.ok()) TellAborted(status.message());
    ReportEndedDeliveries();
    if (!status.ok() || close) break;
  }
  EndAllDeliveries();
  ReportEndedDeliveries();
  ring_.reset();  // revoked before the sender's address is forgotten
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
  const bool committed = std::any_of(deliveries_.begin(), deliveries_.end(),
                                     [](const auto& d) { return d.second.delivery->commit_seen; });
  if (code == ErrorCode::kTransport && committed) {
    peer_gone_ = true;  // finish the committed deliveries without the sender
    return Status::Ok();
  }
  if (code == ErrorCode::kMalformed || code == ErrorCode::kUnsupported) {
    // Name what was wrong, then drop the connection: its stream can't be trusted. The
    // refusal names the delivery when there is exactly one.
    const std::string id = deliveries_.size() == 1 ? deliveries_.begin()->first : "";
    const protocol::Refuse refuse{id, RefuseReason::kMalformed, message.status().message()};
    NoteRefusal(core_, refuse);
    refused_.push_back(refuse);
    (void)channel_.Send(refuse);
  }
  TellAborted(message.status().message());
  close = true;
  return Status::Ok();
}

Status Connection::HandleMessage(const protocol::Message& message) {
  if (const auto* m = std::get_if<protocol::Announce>(&message)) return OnAnnounce(*m);
  if (const auto* m = std::get_if<protocol::Commit>(&message)) return OnCommit(*m);
  if (const auto* m = std::get_if<protocol::Deliver>(&message)) return OnDeliver(*m);
  if (const auto* m = std::get_if<protocol::Query>(&message)) return OnQuery(*m);
  // `writ rm`: answered whole by remote_removal.cc.
  if (const auto* m = std::get_if<protocol::Remove>(&message)) return Send(AnswerRemove(core_, *m));
  if (const auto* m = std::get_if<protocol::Abort>(&message)) {
    if (Find(m->delivery_id) != nullptr) end_why_ = "the sender aborted it";
    EndDelivery(m->delivery_id);  // nothing when it is not in progress here
    return Status::Ok();
  }
  return Refuse("", RefuseReason::kMalformed,
                std::string("a receiver does not accept '") +
                    std::string(protocol::MessageTypeName(message)) + "' messages");
}

Status Connection::Send(const protocol::Message& message) {
  if (const auto* refuse = std::get_if<protocol::Refuse>(&message)) {
    NoteRefusal(core_, *refuse);
    refused_.push_back(*refuse);
  }
  WRIT_RETURN_IF_ERROR(FlushReceipts());  // what was issued before goes first
  return SendNow(message);
}

Status Connection::FlushReceipts() {
  WRIT_RETURN_IF_ERROR(SignIssued().status());
  for (const protocol::Message& message : outbox_.Take()) WRIT_RETURN_IF_ERROR(SendNow(message));
  return Status::Ok();
}

Status Connection::SendNow(const protocol::Message& message) {
  // A sender that committed and left (e.g. --until transport) still gets its delivery
  // validated and retained; there is just nobody to tell.
  if (peer_gone_) return Status::Ok();
  Status sent = channel_.Send(message);
  if (sent.ok() || sent.code() != ErrorCode::kTransport || deliveries_.empty()) return sent;
  return SendFailed(sent);
}

Status Connection::SendCorked() {
  Status sent = channel_.Uncork();
  if (peer_gone_ || sent.ok() || sent.code() != ErrorCode::kTransport || deliveries_.empty()) {
    return peer_gone_ ? Status::Ok() : sent;
  }
  return SendFailed(sent);
}

Status Connection::SendFailed(const Status& sent) {
  // The sender may have committed and closed before this receiver read the close (or
  // even the commit): a commit still buffered counts, and then its delivery goes on.
  for (auto m = channel_.Receive(0ms); m.ok(); m = channel_.Receive(0ms)) {
    const auto* commit = std::get_if<protocol::Commit>(&*m);
    InProgress* p = commit != nullptr ? Find(commit->delivery_id) : nullptr;
    if (p != nullptr &&
        !admission::CommitUsable(p->delivery->announce(), *commit, core_.signing_id)) {
      TakeCommit(*p, *commit);
    }
  }
  const bool committed = std::any_of(deliveries_.begin(), deliveries_.end(),
                                     [](const auto& d) { return d.second.delivery->commit_seen; });
  if (!committed) return sent;
  peer_gone_ = true;  // the uncommitted ones end in the connection's loop (DropUncommitted)
  return Status::Ok();
}

void Connection::DropUncommitted() {
  std::vector<std::string> dropped;
  for (const auto& [id, p] : deliveries_) {
    if (!p.delivery->commit_seen) dropped.push_back(id);
  }
  for (const auto& id : dropped) {
    Tell("delivery " + id + " aborted: the sender closed its connection before committing it");
    EndDelivery(id);
  }
}

Status Connection::Refuse(const std::string& id, RefuseReason reason, const std::string& detail) {
  return Send(protocol::Refuse{id, reason, detail});
}

Result<std::string> Connection::SignIssued(const Receipt* with) {
  WRIT_ASSIGN_OR_RETURN(ReceiptOutbox::Signed signed_now, outbox_.SignIssued(*core_.signer, with));
  for (protocol::Receipt& r : signed_now.issued) {
    if (InProgress* p = Find(r.delivery_id)) p->receipts.push_back(std::move(r.json));
  }
  return std::move(signed_now.with);
}

Status Connection::SendReceipt(InProgress& p, Receipt receipt) {
  NoteRung(core_, *p.delivery, receipt.rung);
  outbox_.Issue(std::move(receipt));
  return Status::Ok();
}

// An announce refused before it became a delivery ends no delivery, so it is counted here
// as one refused (writ_deliveries_total{outcome="refused",rung="none"}).
Status Connection::OnAnnounce(const protocol::Announce& a, bool bytes_in_slot) {
  const size_t refused_before = refused_.size();
  Status admitted = AdmitAnnounce(a, bytes_in_slot);
  if (refused_.size() > refused_before && Find(a.delivery_id) == nullptr) {
    core_.metrics.RefusedAtAnnounce(a.retention);
  }
  return admitted;
}

// Admission: the checks of admission.h in order, the first refusal ending it, then the
// claims; what passes holds them in an AdmittedDelivery for as long as the delivery lasts.
Status Connection::AdmitAnnounce(const protocol::Announce& a, bool bytes_in_slot) {
  if (auto refusal = admission::NotShuttingDown(a, core_.shutdown.begun())) return Send(*refusal);
  if (auto refusal = admission::NotInProgressHere(a, Find(a.delivery_id) != nullptr)) {
    return Send(*refusal);
  }
  const uint32_t limit = std::max<uint32_t>(1, std::min(core_.options.max_deliveries_per_connection,
                                                        core_.options.max_deliveries_per_sender));
  if (auto refusal = admission::WithinInFlightLimit(a, deliveries_.size(), limit)) {
    return Send(*refusal);
  }
  if (auto refusal = CheckSender(a)) return Send(*refusal);
  if (auto refusal = CheckRequest(a)) return Send(*refusal);
  auto held = core_.store->LookupVerified(a.delivery_id);
  if (auto refusal = admission::StoreLookedUp(a, held.status())) return Send(*refusal);
  const bool held_already = held->has_value();
  const bool upgrade = held_already && admission::UpgradesHeld(a, **held);
  if (held_already) {
    if (auto refusal = admission::SameContentAsHeld(a, **held)) return Send(*refusal);
    // Only an announced digest can be answered from the store: without one, the bytes
    // move and the commit's digest is compared after validation.
    if (!upgrade && !bytes_in_slot && !a.digest.empty() &&
        admission::HeldForThisSender(**held, identity_)) {
      // The same authenticated sender, the same content: the existing receipts, without
      // moving the bytes again.
      for (const auto& json : (*held)->receipts) outbox_.Add(a.delivery_id, json);
      return FlushReceipts();
    }
    // Anyone else proves it holds the bytes by sending them.
  }
  auto admitted = AdmittedDelivery::Claim(core_, a, sender_);
  if (auto* refusal = std::get_if<protocol::Refuse>(&admitted)) return Send(*refusal);
  // An upgrade is a fresh delivery into the stronger class (docs/retention.md).
  return BeginDelivery(a, std::move(std::get<AdmittedDelivery>(admitted)), held_already && !upgrade,
                       upgrade);
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

// Opens the store's writer; the delivery then holds `admitted` until it ends.
Status Connection::BeginDelivery(const protocol::Announce& a, AdmittedDelivery admitted,
                                 bool redelivery, bool upgrade) {
  // The workers wake this connection's thread, through its inbox, as ranges are digested.
  auto digest = core_.digests->Open(a.rule, a.bytes, [inbox = inbox_] { inbox->Wake(); });
  store::DeliveryMeta meta{a.delivery_id, a.bytes,   a.chunk_size, a.rule,
                           a.digest,      identity_, upgrade,      a.region_lengths};
  Result<std::unique_ptr<store::PayloadWriter>> writer =
      !digest.ok() ? Result<std::unique_ptr<store::PayloadWriter>>(digest.status())
      : redelivery ? Result<std::unique_ptr<store::PayloadWriter>>(
                         std::make_unique<HeldDeliveryWriter>(*core_.store, a.delivery_id))
                   : core_.store->Begin(meta, a.retention);
  if (!writer.ok()) {
    return Refuse(a.delivery_id, ReasonFor(writer.status()), writer.status().message());
  }
  InProgress& p = deliveries_[a.delivery_id];
  p.delivery =
      std::make_unique<InboundDelivery>(a, std::move(digest).value(), std::move(writer).value());
  p.delivery->redelivery = redelivery;
  p.delivery->upgrade = upgrade;
  p.delivery->serial = core_.next_delivery_serial.fetch_add(1);
  p.admitted.emplace(std::move(admitted));
  idle_since_ns_ = 0;
  p.last_progress = Clock::now();
  return Status::Ok();
}

InProgress* Connection::Find(const std::string& id) {
  auto it = deliveries_.find(id);
  return it == deliveries_.end() ? nullptr : &it->second;
}

Status Connection::OnCommit(const protocol::Commit& c) {
  InProgress* p = Find(c.delivery_id);
  if (p == nullptr) {
    return Refuse(c.delivery_id, RefuseReason::kUnknownDelivery,
                  "commit for " + c.delivery_id + ", which is not in progress on this connection");
  }
  if (auto refusal = admission::CommitUsable(p->delivery->announce(), c, core_.signing_id)) {
    EndDelivery(c.delivery_id);
    return Send(*refusal);
  }
  TakeCommit(*p, c);
  p->last_progress = Clock::now();
  return Status::Ok();
}

// A usable commit: its digest is the one the bytes must match when none was announced.
void Connection::TakeCommit(InProgress& p, const protocol::Commit& c) {
  p.delivery->commit_seen = true;
  if (p.delivery->digest_known()) return;
  p.delivery->AdoptCommittedDigest(c.digest);
  p.delivery->writer().SetDigest(c.digest);
}

Status Connection::OnQuery(const protocol::Query& q) {
  using json = nlohmann::json;
  auto admitted = core_.auth.AdmitQuery(q, core_.signing_id, std::chrono::system_clock::now());
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
  for (uint32_t value : notifications_) {
    const auto tag = static_cast<uint16_t>(value >> 16);
    if (ring_ && tag == ring_->tag()) {
      WRIT_RETURN_IF_ERROR(OnRingNotification(value & 0xFFFF));
      continue;
    }
    auto owner = tag_owner_.find(tag);
    if (owner == tag_owner_.end()) continue;  // a late notification of an ended delivery
    const std::string id = owner->second;     // a copy: EndDelivery() erases the entry
    InProgress* p = Find(id);
    if (p == nullptr) continue;
    p->last_progress = Clock::now();
    Status s = p->delivery->OnNotification(tag, static_cast<uint16_t>(value & 0xFFFF));
    if (s.code() == ErrorCode::kMalformed) {
      EndDelivery(id);
      WRIT_RETURN_IF_ERROR(Refuse(id, RefuseReason::kMalformed, s.message()));
    }
  }
  return Status::Ok();
}

void Connection::Revoke(LiveWindow& window) {
  (void)window.region.Close();  // revoke first: no write may land after release
  core_.router.Unbind(window.tag);
  tag_owner_.erase(window.tag);
  // A window placed in the store's memory exposed none of the pool's bytes.
  const bool pooled = window.data == core_.pool->data(window.pool_index);
  core_.pool->Release(window.pool_index, pooled ? window.length : 0);
  window.slot.reset();  // given back now: a re-grant may follow before `window` ends
}

// Grants windows while the delivery needs them and the pool and limits allow.
Status Connection::GrantWindows(const std::string& id) {
  InProgress& p = deliveries_.at(id);
  InboundDelivery& d = *p.delivery;
  while (d.NeedsWindow(core_.options.windows_per_delivery)) {
    auto slot = Reservation::Take(core_, sender_, SenderUsage::kWindows);
    if (!slot) {
      p.window_wait_why = "sender " + sender_ + " holds its limit of " +
                          std::to_string(core_.options.max_windows_per_sender) +
                          " windows in its other deliveries";
      break;
    }
    auto window = core_.pool->TryAcquire(inbox_->event_fd(), d.window_count() > 0, d.serial);
    if (!window) {
      p.window_wait_why = "all " + std::to_string(core_.pool->count()) +
                          " windows of this receiver are granted to deliveries in progress";
      break;  // woken through the inbox when one is released
    }
    auto tag = core_.router.Bind(inbox_, Writer());
    if (!tag) {
      core_.pool->Release(window->index, 0);
      p.window_wait_why = "no notification tag is free";
      break;
    }
    WRIT_RETURN_IF_ERROR(GrantOne(id, *window, *tag, std::move(*slot)));
    if (Find(id) == nullptr) return Status::Ok();
  }
  // The window wait runs while the delivery holds none; a grant ends it.
  if (d.window_count() > 0 || !d.NeedsWindow(core_.options.windows_per_delivery)) {
    p.window_wait_since.reset();
  } else if (!p.window_wait_since) {
    p.window_wait_since = Clock::now();
  }
  return Status::Ok();
}

// One window (pool window `window`, notification tag `tag`, its place in the sender's limit
// `slot`) registered and granted.
Status Connection::GrantOne(const std::string& id, const WindowPool::Window& window, uint16_t tag,
                            Reservation slot) {
  InProgress& p = deliveries_.at(id);
  InboundDelivery& d = *p.delivery;
  LiveWindow live;
  live.tag = tag;
  live.pool_index = window.index;
  live.slot.emplace(std::move(slot));
  live.first_chunk = d.next_grant_chunk();
  live.chunk_count = d.ChunksToGrant(core_.pool->window_bytes());
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
    EndDelivery(id);
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
  tag_owner_[live.tag] = id;
  d.AddWindow(std::move(live));
  p.last_progress = Clock::now();
  WRIT_RETURN_IF_ERROR(Send(grant));
  if (core_.progress != nullptr) core_.progress->Wake();
  return Status::Ok();
}

Status Connection::AdvanceAll() {
  std::vector<std::string> ids;
  ids.reserve(deliveries_.size());
  for (const auto& entry : deliveries_) ids.push_back(entry.first);
  for (const auto& id : ids) {
    if (Find(id) != nullptr) WRIT_RETURN_IF_ERROR(Advance(id));
  }
  return Status::Ok();
}

Status Connection::Advance(const std::string& id) {
  WRIT_RETURN_IF_ERROR(GrantWindows(id));
  InProgress* p = Find(id);
  if (p == nullptr) return Status::Ok();
  InboundDelivery& d = *p->delivery;

  Status consumed = d.Consume();
  if (!consumed.ok()) {
    // The refusal goes out before the windows are revoked, so the sender reads why (e.g. a
    // full disk: exit 6) before any write in flight fails on a revoked window.
    Status told = Refuse(id, ReasonFor(consumed),
                         "storing delivery " + id + " failed: " + consumed.message());
    EndDelivery(id);
    return told;
  }
  // Only windows the workers are done with go back to the pool (and so to another delivery).
  std::vector<LiveWindow> digested = d.TakeDigested();
  for (auto& window : digested) Revoke(window);
  // Re-grant at once what was just revoked: the sender may be waiting for nothing else.
  if (!digested.empty()) {
    WRIT_RETURN_IF_ERROR(GrantWindows(id));
    if (Find(id) == nullptr) return Status::Ok();
  }

  // A receipt names the delivery's digest: without an announced one, it waits for the commit.
  // A one-chunk delivery that asks for more issues it as its validation is decided, so that
  // `received`, `validated` and `retained` are signed together: one signature for the three.
  const bool finishing = d.commit_seen && d.all_received() && d.all_consumed() && d.all_digested();
  const bool with_validation = d.chunk_count() == 1 && d.announce().until > Rung::kReceived;
  if (d.all_received() && !d.received_receipt_sent && d.digest_known() &&
      (finishing || !with_validation)) {
    d.received_receipt_sent = true;
    WRIT_RETURN_IF_ERROR(
        SendReceipt(*p, ReceivedReceipt(core_, RefOf(d.announce()), d.chunk_count())));
  }
  if (finishing) return Finish(id);
  return Status::Ok();
}

Status Connection::Finish(const std::string& id) {
  InProgress& p = deliveries_.at(id);
  InboundDelivery& d = *p.delivery;
  const protocol::Announce a = d.announce();
  const DeliveryRef ref = RefOf(a);
  const std::vector<uint8_t> computed = d.FinishDigest();
  if (computed != d.expected_digest()) {
    const bool from_commit = d.digest_from_commit;
    EndDelivery(id);
    // Nothing computed over the received bytes goes back to the peer: a digest of what a
    // window held would let a sender that never wrote read it out, a probe at a time.
    return Refuse(a.delivery_id, RefuseReason::kValidation,
                  "validation failed: the " + std::to_string(a.bytes) + " bytes received for " +
                      a.delivery_id + " do not match the " +
                      (from_commit ? "committed " : "announced ") +
                      std::string(writ::RuleName(a.rule)) + " digest");
  }
  WRIT_RETURN_IF_ERROR(SendReceipt(p, ValidatedReceipt(core_, ref)));
  if (d.upgrade) WRIT_RETURN_IF_ERROR(CheckUpgradeContent(a));
  if (Find(id) == nullptr) return Status::Ok();
  if (a.until == Rung::kProcessed && core_.options.processing) {
    WRIT_RETURN_IF_ERROR(FlushReceipts());  // `validated` does not wait for the step
    bool refused = false;
    WRIT_RETURN_IF_ERROR(Process(p, a, ref, refused));
    if (refused) return Status::Ok();
  }
  if (Status out = PublishOut(p); !out.ok()) return RefuseOut(a.delivery_id, out);
  if (d.redelivery) return AnswerFromStore(a);
  // Nor for a commit that syncs to the device.
  if (a.retention == RetentionClass::kPowerLoss) WRIT_RETURN_IF_ERROR(FlushReceipts());
  // A durable commit records the receipts issued so far in its index row: signed first.
  // A volatile one is in memory: they are signed with `retained`, one signature for all.
  if (a.retention != RetentionClass::kVolatile) WRIT_RETURN_IF_ERROR(SignIssued().status());
  const size_t recorded_at_commit = p.receipts.size();
  const auto commit_began = Clock::now();
  auto evidence = d.writer().Commit(p.receipts);
  if (evidence.ok()) core_.metrics.StoreCommitted(a.retention, SecondsSince(commit_began));
  if (!evidence.ok()) {
    EndDelivery(id);
    return Refuse(a.delivery_id, ReasonFor(evidence.status()),
                  "retention failed: " + evidence.status().message());
  }
  const Receipt retained = RetainedReceipt(core_, ref, *evidence);
  WRIT_ASSIGN_OR_RETURN(const std::string json, SignIssued(&retained));
  p.receipts.push_back(json);
  if (Status out = PublishOutReceiptsOf(a, p.receipts); !out.ok()) {
    return RefuseOut(a.delivery_id, out);
  }
  // The retained receipt is recorded with the delivery (after those signed with it) before
  // it is sent; if that fails the class was not reached (the store has undone the commit),
  // and the sender is told so.
  const std::vector<std::string> after_commit(p.receipts.begin() + recorded_at_commit,
                                              p.receipts.end());
  if (Status recorded = core_.store->AppendReceipts(a.delivery_id, after_commit); !recorded.ok()) {
    EndDelivery(id);
    return Refuse(a.delivery_id, ReasonFor(recorded), "retention failed: " + recorded.message());
  }
  EndDelivery(id);
  core_.shutdown.NoteDrained(a.delivery_id);
  NoteRetained(a.delivery_id);
  // The connection's first retained delivery earns it a ring, told before its receipts.
  WRIT_RETURN_IF_ERROR(MaybeGrantRing());
  outbox_.Add(a.delivery_id, json);
  return FlushReceipts();  // with the rungs reached in the same pass
}

// The processing step, for a delivery that asks for `processed`: its receipt, or the
// delivery refused (`refused`) naming why the step failed.
Status Connection::Process(InProgress& p, const protocol::Announce& a, const DeliveryRef& ref,
                           bool& refused) {
  const ProcessingStep& step = *core_.options.processing;
  store::PayloadWriter& writer = p.delivery->writer();
  DeliveryView view{
      a.delivery_id,
      a.bytes,
      ref.digest,
      [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); },
      [this] { return core_.shutdown.aborting(); },
      ref.rule};
  Status ran = step.run(view);
  if (ran.ok()) return SendReceipt(p, ProcessedReceipt(core_, ref, step));
  refused = true;
  EndDelivery(a.delivery_id);
  if (core_.shutdown.aborting()) return AbortForShutdown(a.delivery_id);
  Tell("delivery " + a.delivery_id + " refused: processing step '" + step.name +
       "' failed: " + ran.message());
  return Refuse(a.delivery_id, RefuseReason::kProcessing,
                "processing step '" + step.name + "' failed: " + ran.message());
}

// An upgrade announced without a digest: the committed one must be the held copy's, or the
// id names other content (the delivery is then refused and ended).
Status Connection::CheckUpgradeContent(const protocol::Announce& a) {
  auto held = core_.store->Lookup(a.delivery_id);
  if (!held.ok() || !held->has_value() || (*held)->meta.digest == a.digest) return Status::Ok();
  EndDelivery(a.delivery_id);
  return Refuse(a.delivery_id, RefuseReason::kConflictingId,
                "delivery " + a.delivery_id + " is already retained with other content");
}

// A re-delivery validated: the store retains these very bytes (same id, size, rule and
// digest) already, so its retention receipts are the answer; nothing is stored twice.
Status Connection::AnswerFromStore(const protocol::Announce& a) {
  auto held = core_.store->LookupVerified(a.delivery_id);
  EndDelivery(a.delivery_id);
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
  NoteRetained(a.delivery_id);
  for (const auto& json : (*held)->receipts) {
    auto receipt = ReceiptFromJson(json);
    if (receipt.ok() && receipt->rung == ReceiptRung::kRetained) outbox_.Add(a.delivery_id, json);
  }
  return FlushReceipts();
}

Status Connection::PublishOut(InProgress& p) {
  if (core_.options.out_dir.empty()) return Status::Ok();
  const protocol::Announce& a = p.delivery->announce();
  store::PayloadWriter& writer = p.delivery->writer();
  auto publish = [&] {
    return PublishOutPayload(
        core_.options.out_dir, a.delivery_id, a.bytes, a.retention == RetentionClass::kPowerLoss,
        [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); });
  };
  Status published = publish();
  // Other content under the id, and the store retains nothing under it (not a re-send, not
  // an upgrade): the file outlived its delivery and must not block the id.
  if (published.code() != ErrorCode::kRefused || p.delivery->redelivery || p.delivery->upgrade) {
    return published;
  }
  WRIT_ASSIGN_OR_RETURN(
      const std::string moved,
      SetAsideStaleOutFiles(core_.options.out_dir, a.delivery_id, store::NowUnixMs()));
  if (!moved.empty()) Tell(moved);
  return publish();
}

Status Connection::PublishOutReceiptsOf(const protocol::Announce& a,
                                        const std::vector<std::string>& receipts) {
  if (core_.options.out_dir.empty()) return Status::Ok();
  return PublishOutReceipts(core_.options.out_dir, a.delivery_id, receipts,
                            a.retention == RetentionClass::kPowerLoss);
}

// No receipt claims more than happened: an output that failed refuses the delivery.
Status Connection::RefuseOut(const std::string& id, const Status& failed) {
  EndDelivery(id);
  const bool conflict = failed.code() == ErrorCode::kRefused;
  return Refuse(id, conflict ? RefuseReason::kConflictingId : RefuseReason::kRetention,
                "output failed: " + failed.message());
}

void Connection::EndDelivery(const std::string& id) {
  auto it = deliveries_.find(id);
  if (it == deliveries_.end()) return;
  InProgress& p = it->second;
  const protocol::Announce& a = p.delivery->announce();
  EndedDelivery& ended = ended_.emplace_back();
  ended.id = a.delivery_id;
  ended.sender_key = identity_;
  ended.peer = channel_.peer();
  ended.bytes = a.bytes;
  ended.retention = a.retention;
  ended.reached = p.delivery->reached;
  ended.ladder_reached = p.delivery->ladder_reached;
  ended.retained = p.delivery->retained;
  ended.seconds = SecondsSince(p.delivery->announced);
  for (auto& window : p.delivery->TakeWindows()) Revoke(window);
  // Its write may still land: the slot is given back when it does (or at the timeout).
  if (p.ring_slot && !p.slot_copied && ring_) ring_->Abandon(*p.ring_slot);
  p.delivery.reset();  // an uncommitted writer discards its bytes
  p.admitted.reset();  // then the id and the sender's place are free again
  deliveries_.erase(it);
  if (!deliveries_.empty()) return;
  core_.pool->ForgetWaiter(inbox_->event_fd());  // no longer waits for a window
  // The connection is idle from now: the idle timeout counts from the end of its deliveries.
  last_message_ = Clock::now();
  idle_since_ns_ = last_message_->time_since_epoch().count();
}

void Connection::EndAllDeliveries() {
  while (!deliveries_.empty()) EndDelivery(deliveries_.begin()->first);
}

void Connection::TellAborted(const std::string& why) const {
  for (const auto& entry : deliveries_) Tell("delivery " + entry.first + " aborted: " + why);
}

namespace {

std::string Ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

}  // namespace

Connection::Clock::time_point Connection::NextDeadline() const {
  const ReceiverOptions& opt = core_.options;
  if (deliveries_.empty()) {
    return last_message_ ? *last_message_ + opt.idle_timeout : started_ + opt.handshake_timeout;
  }
  auto next = Clock::time_point::max();
  for (const auto& entry : deliveries_) next = std::min(next, DeadlineOf(entry.second, opt));
  return next;
}

Connection::Clock::time_point Connection::DeadlineOf(const InProgress& p,
                                                     const ReceiverOptions& opt) {
  // The same choice as CheckDeliveryTimeouts: a delivery waiting for its first window is
  // bounded by the window wait alone.
  if (p.window_wait_since && p.delivery->window_count() == 0) {
    return *p.window_wait_since + opt.window_wait_timeout;
  }
  return p.last_progress + opt.grant_unused_timeout;
}

Status Connection::CheckTimeouts(bool& close) {
  const ReceiverOptions& opt = core_.options;
  const auto now = Clock::now();
  // Slots whose write or deliver never came are cleared and given back.
  if (ring_) ring_->Expire(now, opt.grant_unused_timeout);
  if (!deliveries_.empty()) {
    std::vector<std::string> ids;
    for (const auto& entry : deliveries_) ids.push_back(entry.first);
    for (const auto& id : ids) WRIT_RETURN_IF_ERROR(CheckDeliveryTimeouts(id, now));
    return Status::Ok();
  }
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
Status Connection::CheckDeliveryTimeouts(const std::string& id, Clock::time_point now) {
  const ReceiverOptions& opt = core_.options;
  const InProgress& p = deliveries_.at(id);
  const InboundDelivery& d = *p.delivery;
  std::string why;
  if (p.window_wait_since && d.window_count() == 0) {
    if (now - *p.window_wait_since >= opt.window_wait_timeout) {
      why = "no window available for " + Ms(opt.window_wait_timeout) +
            " (the window wait "
            "timeout): " +
            p.window_wait_why + "; try again later";
    }
  } else if (now - p.last_progress >= opt.grant_unused_timeout && p.ring_slot && !p.slot_copied) {
    why = "the write into its ring slot " + std::to_string(*p.ring_slot) + " did not land within " +
          Ms(opt.grant_unused_timeout) + " (the grant-unused timeout)";
  } else if (now - p.last_progress >= opt.grant_unused_timeout) {
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
  EndDelivery(id);
  return told;
}

void Connection::NoteRetained(const std::string& id) {
  for (EndedDelivery& d : ended_) {
    if (d.id != id) continue;
    d.outcome = DeliveryOutcome::kRetained;
    d.reached = ReceiptRung::kRetained;
    d.retained = true;
    core_.metrics.RungReached(ReceiptRung::kRetained, d.seconds);
  }
}

void Connection::ReportEndedDeliveries() {
  for (EndedDelivery& d : ended_) {
    if (d.outcome != DeliveryOutcome::kRetained) {
      for (const protocol::Refuse& r : refused_) {
        if (r.delivery_id != d.id) continue;
        d.outcome = DeliveryOutcome::kRefused;
        d.reason = protocol::RefuseReasonName(r.reason);
        d.detail = r.detail;
      }
      if (d.outcome == DeliveryOutcome::kAborted) d.detail = end_why_;
    }
    ReportEnded(core_, d);
  }
  ended_.clear();
  refused_.clear();
  if (deliveries_.empty()) end_why_.clear();
}

}  // namespace writ::receiver
