#include "receiver/connection.h"

#include <poll.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "receipt/signing.h"
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
    : core_(core), channel_(std::move(channel)) {
  // Until senders authenticate, a sender is its host.
  const std::string& peer = channel_.peer();
  sender_ = peer.substr(0, peer.rfind(':'));
}

Connection::~Connection() { EndDelivery(); }

void Connection::Run() {
  auto inbox = Inbox::Create();
  if (!inbox.ok()) {
    finished_ = true;
    return;
  }
  inbox_ = *inbox;
  protocol::Hello hello;
  hello.provider = core_.node->provider().name();
  hello.fabric_address = core_.fabric_address;
  hello.receiver_id = core_.issuer;
  if (!channel_.Send(hello).ok()) {
    finished_ = true;
    return;
  }
  for (;;) {
    if (peer_gone_ && !delivery_) break;
    pollfd fds[2] = {{peer_gone_ ? -1 : channel_.fd(), POLLIN, 0}, {inbox_->event_fd(), POLLIN, 0}};
    const int ready = poll(fds, 2, 500);
    if (ready < 0 && errno != EINTR) break;
    Status status = ApplyNotifications();
    if (status.ok() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      // One blocking read for the frame that woke us, then whatever is already buffered.
      auto message = channel_.Receive(10s);
      while (message.ok() && status.ok()) {
        status = HandleMessage(*message);
        if (status.ok()) message = channel_.Receive(0ms);
      }
      if (!message.ok() && message.status().code() == ErrorCode::kTransport && delivery_ &&
          delivery_->commit_seen) {
        peer_gone_ = true;  // finish the committed delivery without the sender
      } else if (!message.ok() && message.status().code() != ErrorCode::kTimeout) {
        if (message.status().code() == ErrorCode::kMalformed ||
            message.status().code() == ErrorCode::kUnsupported) {
          // Name what was wrong, then drop the connection: its stream can't be trusted.
          (void)channel_.Send(protocol::Refuse{delivery_ ? delivery_->announce().delivery_id : "",
                                               RefuseReason::kMalformed,
                                               message.status().message()});
        }
        break;
      }
    }
    if (status.ok() && delivery_) status = Advance();
    if (!status.ok()) break;
  }
  EndDelivery();
  if (sender_peer_) (void)core_.node->RemovePeer(*sender_peer_);
  core_.pool->ForgetWaiter(inbox_->event_fd());
  channel_.Shutdown();
  finished_ = true;
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
  return channel_.Send(message);
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

Status Connection::OnAnnounce(const protocol::Announce& a) {
  const ReceiverOptions& opt = core_.options;
  if (delivery_) {
    return Refuse(a.delivery_id, RefuseReason::kLimit,
                  "delivery " + delivery_->announce().delivery_id +
                      " is still in progress on this connection");
  }
  auto admitted = core_.auth.Admit(a, core_.issuer, std::chrono::system_clock::now());
  if (!admitted.ok()) {
    return Refuse(a.delivery_id, RefuseReason::kAuth, admitted.status().message());
  }
  if (!admitted->empty()) sender_ = *admitted;  // limits count per key
  if (!core_.node->provider().checks_remote_keys()) {
    // shm never checks memory keys: any writer could scribble anywhere in this process.
    // The kernel already limits cross-process writes to the same user; writ offers shm
    // only to senders running as the receiver's own user, and says so.
    // The peer of one connection does not change: looked up once (reading /proc/net/tcp
    // took milliseconds on a host with many sockets), for its first announce.
    if (!peer_uid_) peer_uid_ = LoopbackPeerUid(channel_.fd());
    const Result<uid_t>& uid = *peer_uid_;
    if (!uid.ok() || *uid != getuid()) {
      return Refuse(a.delivery_id, RefuseReason::kAuth,
                    "provider " + core_.node->provider().name() +
                        " does not check memory keys, so this receiver admits only its own user "
                        "(uid " +
                        std::to_string(getuid()) + ") over it; the sender is " +
                        (uid.ok() ? "uid " + std::to_string(*uid) : uid.status().message()));
    }
  }
  if (core_.node->kind() == fabric::EndpointKind::kRdm && !a.sender_fabric_address.empty() &&
      !sender_peer_) {
    // Without it, the sender still writes (shm learns its name on first contact) but is
    // never forgotten: after 256 senders an shm endpoint takes no new writer.
    auto peer = core_.node->AddPeer(a.sender_fabric_address);
    if (!peer.ok()) {
      return Refuse(a.delivery_id, RefuseReason::kMalformed,
                    "sender fabric address: " + peer.status().message());
    }
    sender_peer_ = *peer;
  }
  if (a.bytes > opt.max_delivery_bytes) {
    return Refuse(a.delivery_id, RefuseReason::kOversize,
                  "delivery of " + std::to_string(a.bytes) +
                      " bytes exceeds this receiver's limit of " +
                      std::to_string(opt.max_delivery_bytes) + " bytes");
  }
  if (a.chunk_size > core_.pool->window_bytes()) {
    return Refuse(a.delivery_id, RefuseReason::kOversize,
                  "chunk size " + std::to_string(a.chunk_size) +
                      " exceeds this receiver's window of " +
                      std::to_string(core_.pool->window_bytes()) + " bytes");
  }
  if (a.until == Rung::kProcessed && !opt.processing) {
    return Refuse(a.delivery_id, RefuseReason::kUnsupported,
                  "this receiver registers no processing step, so it never reports 'processed'");
  }
  if (!core_.store->Offers(a.retention)) {
    return Refuse(a.delivery_id, RefuseReason::kRetention,
                  std::string("this receiver does not offer ") +
                      std::string(protocol::RetentionName(a.retention)) +
                      " retention (without --data only volatile is offered)");
  }
  auto existing = core_.store->LookupVerified(a.delivery_id);
  if (!existing.ok())
    return Refuse(a.delivery_id, RefuseReason::kInternal, existing.status().message());
  if (existing->has_value()) {
    const store::RetainedDelivery& held = **existing;
    if (held.meta.digest != a.digest || held.meta.bytes != a.bytes || held.meta.rule != a.rule) {
      return Refuse(a.delivery_id, RefuseReason::kConflictingId,
                    "delivery " + a.delivery_id + " is already retained with other content (" +
                        std::to_string(held.meta.bytes) + " bytes, " +
                        std::string(protocol::RuleName(held.meta.rule)) + " " +
                        protocol::ToHex(held.meta.digest) + ")");
    }
    if (held.retention < a.retention) {
      return Refuse(a.delivery_id, RefuseReason::kRetention,
                    "delivery " + a.delivery_id + " is already retained as " +
                        std::string(protocol::RetentionName(held.retention)) + ", weaker than " +
                        std::string(protocol::RetentionName(a.retention)));
    }
    // Same content: the existing receipts, without moving the bytes again.
    for (const auto& json : held.receipts) {
      WRIT_RETURN_IF_ERROR(Send(protocol::Receipt{a.delivery_id, json}));
    }
    return Status::Ok();
  }
  if (!core_.ClaimId(a.delivery_id)) {
    return Refuse(a.delivery_id, RefuseReason::kConflictingId,
                  "delivery " + a.delivery_id + " is in progress on another connection");
  }
  if (!core_.Reserve(sender_, ReceiverCore::Usage::kDeliveries)) {
    core_.ReleaseId(a.delivery_id);
    return Refuse(a.delivery_id, RefuseReason::kLimit,
                  "sender " + sender_ + " already has " +
                      std::to_string(opt.max_deliveries_per_sender) + " deliveries in progress");
  }
  auto digester = protocol::Digester::Create(a.rule);
  store::DeliveryMeta meta{a.delivery_id, a.bytes, a.chunk_size, a.rule, a.digest};
  auto writer = digester.ok() ? core_.store->Begin(meta, a.retention)
                              : Result<std::unique_ptr<store::PayloadWriter>>(digester.status());
  if (!writer.ok()) {
    core_.ReleaseId(a.delivery_id);
    core_.Unreserve(sender_, ReceiverCore::Usage::kDeliveries);
    return Refuse(a.delivery_id, ReasonFor(writer.status()), writer.status().message());
  }
  delivery_ =
      std::make_unique<InboundDelivery>(a, std::move(digester).value(), std::move(writer).value());
  receipts_.clear();
  return Status::Ok();
}

Status Connection::OnCommit(const protocol::Commit& c) {
  if (!delivery_ || delivery_->announce().delivery_id != c.delivery_id) {
    return Refuse(c.delivery_id, RefuseReason::kUnknownDelivery,
                  "commit for " + c.delivery_id + ", which is not in progress on this connection");
  }
  delivery_->commit_seen = true;
  return Status::Ok();
}

Status Connection::OnQuery(const protocol::Query& q) {
  using json = nlohmann::json;
  auto held = core_.store->LookupVerified(q.delivery_id);
  json answer{{"id", q.delivery_id}};
  if (!held.ok() || !held->has_value()) {
    answer["state"] = "unknown";
  } else {
    const store::RetainedDelivery& d = **held;
    answer["state"] = "retained";
    answer["retention"] = protocol::RetentionName(d.retention);
    answer["bytes"] = d.meta.bytes;
    answer["rule"] = protocol::RuleName(d.meta.rule);
    answer["digest"] = protocol::ToHex(d.meta.digest);
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
  core_.pool->Release(window.pool_index);
  core_.Unreserve(sender_, ReceiverCore::Usage::kWindows);
}

// Grants windows while the delivery needs them and the pool and limits allow.
Status Connection::GrantWindows() {
  InboundDelivery& d = *delivery_;
  const std::string id = d.announce().delivery_id;  // a copy: EndDelivery() frees the announce
  while (d.NeedsWindow(core_.options.windows_per_delivery)) {
    if (!core_.Reserve(sender_, ReceiverCore::Usage::kWindows))
      break;  // its other deliveries hold them
    auto window = core_.pool->TryAcquire(inbox_->event_fd());
    if (!window) {
      core_.Unreserve(sender_, ReceiverCore::Usage::kWindows);
      break;  // woken through the inbox when one is released
    }
    auto tag = core_.router.Bind(inbox_);
    if (!tag) {
      core_.pool->Release(window->index);
      core_.Unreserve(sender_, ReceiverCore::Usage::kWindows);
      break;
    }
    LiveWindow live;
    live.tag = *tag;
    live.pool_index = window->index;
    live.first_chunk = d.next_grant_chunk();
    live.chunk_count = d.ChunksForWindow(core_.pool->window_bytes());
    live.length = d.BytesForChunks(live.first_chunk, live.chunk_count);
    // Where the store can take the bytes in place (memory-backed volatile retention), the
    // window is the store's own memory and consuming it copies nothing; the pool's window
    // then only counts against the limit of windows in flight.
    auto placement = d.writer().Placement(live.first_chunk * d.announce().chunk_size, live.length);
    if (!placement.ok()) {
      core_.router.Unbind(live.tag);
      core_.pool->Release(live.pool_index);
      core_.Unreserve(sender_, ReceiverCore::Usage::kWindows);
      EndDelivery();
      return Refuse(id, ReasonFor(placement.status()),
                    "storing delivery " + id + " failed: " + placement.status().message());
    }
    live.data = *placement != nullptr ? *placement : window->data;
    auto region = core_.node->Register(live.data, live.length, fabric::Access::kRemoteWrite);
    if (!region.ok()) {
      core_.router.Unbind(live.tag);
      core_.pool->Release(live.pool_index);
      core_.Unreserve(sender_, ReceiverCore::Usage::kWindows);
      EndDelivery();
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
    WRIT_RETURN_IF_ERROR(Send(grant));
    if (core_.progress != nullptr) core_.progress->Wake();
  }

  return Status::Ok();
}

Status Connection::Advance() {
  InboundDelivery& d = *delivery_;
  const std::string id = d.announce().delivery_id;  // a copy: EndDelivery() frees the announce
  WRIT_RETURN_IF_ERROR(GrantWindows());
  if (!delivery_) return Status::Ok();

  auto consumed = d.Consume();
  if (!consumed.ok()) {
    // The refusal goes out before the windows are revoked, so the sender reads why (e.g. a
    // full disk: exit 6) before any write in flight fails on a revoked window.
    Status told = Refuse(id, ReasonFor(consumed.status()),
                         "storing delivery " + id + " failed: " + consumed.status().message());
    EndDelivery();
    return told;
  }
  for (auto& window : *consumed) Revoke(window);
  // Re-grant at once what was just revoked: the sender may be waiting for nothing else.
  if (!consumed->empty()) {
    WRIT_RETURN_IF_ERROR(GrantWindows());
    if (!delivery_) return Status::Ok();
  }

  if (d.all_received() && !d.received_receipt_sent) {
    d.received_receipt_sent = true;
    WRIT_RETURN_IF_ERROR(SendReceipt(ReceivedReceipt(core_, RefOf(d.announce()), d.chunk_count())));
  }
  if (d.commit_seen && d.all_received() && d.all_consumed()) return Finish();
  return Status::Ok();
}

Status Connection::Finish() {
  InboundDelivery& d = *delivery_;
  const protocol::Announce a = d.announce();
  const DeliveryRef ref = RefOf(a);
  const std::vector<uint8_t> computed = d.FinishDigest();
  if (computed != a.digest) {
    EndDelivery();
    return Refuse(a.delivery_id, RefuseReason::kValidation,
                  "validation failed: delivery " + a.delivery_id + " has " +
                      std::string(protocol::RuleName(a.rule)) + " " + protocol::ToHex(computed) +
                      ", announced " + protocol::ToHex(a.digest));
  }
  WRIT_RETURN_IF_ERROR(SendReceipt(ValidatedReceipt(core_, ref)));
  if (core_.options.processing) {
    const ProcessingStep& step = *core_.options.processing;
    store::PayloadWriter& writer = d.writer();
    DeliveryView view{
        a.delivery_id, a.bytes, ref.digest,
        [&writer](uint64_t offset, std::span<uint8_t> out) { return writer.Read(offset, out); }};
    Status ran = step.run(view);
    if (!ran.ok()) {
      EndDelivery();
      return Refuse(a.delivery_id, RefuseReason::kInternal,
                    "processing step '" + step.name + "' failed: " + ran.message());
    }
    WRIT_RETURN_IF_ERROR(SendReceipt(ProcessedReceipt(core_, ref, step.name)));
  }
  auto evidence = d.writer().Commit(receipts_);
  if (!evidence.ok()) {
    EndDelivery();
    return Refuse(a.delivery_id, ReasonFor(evidence.status()),
                  "retention failed: " + evidence.status().message());
  }
  WRIT_ASSIGN_OR_RETURN(const std::string json, Sign(RetainedReceipt(core_, ref, *evidence)));
  // The retained receipt is recorded with the delivery before it is sent; if that fails the
  // class was not reached (the store has undone the commit), and the sender is told so.
  if (Status recorded = core_.store->AppendReceipt(a.delivery_id, json); !recorded.ok()) {
    EndDelivery();
    return Refuse(a.delivery_id, ReasonFor(recorded), "retention failed: " + recorded.message());
  }
  EndDelivery();
  return Send(protocol::Receipt{a.delivery_id, json});
}

void Connection::EndDelivery() {
  if (!delivery_) return;
  for (auto& window : delivery_->TakeWindows()) Revoke(window);
  core_.ReleaseId(delivery_->announce().delivery_id);
  core_.Unreserve(sender_, ReceiverCore::Usage::kDeliveries);
  delivery_.reset();  // an uncommitted writer discards its bytes
}

}  // namespace writ::receiver
