// writ::Sender (a session of many deliveries) and writ::Send (a session of one).
#include "writ/sender.h"

#include "protocol/codec.h"
#include "receipt/identity.h"
#include "sender/delivery_run.h"
#include "sender/delivery_source.h"
#include "sender/digest_cache.h"
#include "sender/link.h"
#include "sender/test_seams.h"

namespace writ {

using sender::DeliveryRun;
using sender::DeliverySource;
using sender::Link;
using sender::PreparedDelivery;

class Sender::Impl {
 public:
  static Result<std::unique_ptr<Impl>> Connect(const SessionOptions& options) {
    auto impl = std::make_unique<Impl>();
    if (!options.identity_dir.empty()) {
      auto identity = receipt::Identity::LoadOrCreate(options.identity_dir);
      if (!identity.ok()) return identity.status().Annotate("sender identity");
      impl->identity_.emplace(std::move(identity).value());
      impl->cache_.emplace(CachePath(options.identity_dir));
    }
    WRIT_ASSIGN_OR_RETURN(impl->link_, Link::Open(options));
    return impl;
  }

  static std::string CachePath(const std::string& identity_dir) {
    return identity_dir + "/digest-cache";
  }

  // Runs one delivery whose source is already open (`prepared`).
  void Deliver(const DeliveryOptions& options, PreparedDelivery& prepared, DeliveryOutcome& out) {
    DeliverOnce(options, prepared, out);
    if (cache_) sender::UpdateDigestCache(*cache_, options, prepared, out);
  }

  void DeliverOnce(const DeliveryOptions& options, PreparedDelivery& prepared,
                   DeliveryOutcome& out) {
    ++deliveries_;
    if (corrupt_chunk_) prepared.corrupt_chunk = corrupt_chunk_;
    if (!health_.ok()) {
      out.status = health_;
      return;
    }
    if (Status drained = DrainPending(options.stall_timeout); !drained.ok()) {
      out.status = drained;
      return;
    }
    Status status;
    {
      DeliveryRun run(*link_, identity_ ? &*identity_ : nullptr, options, prepared, out, last_id_);
      status = run.Run();
      if (run.announced()) last_id_ = out.delivery.id;
      if (status.ok()) {
        if (!run.receiver_ended()) pending_id_ = out.delivery.id;
      } else if (run.announced() && !run.broken()) {
        // The delivery failed on its own (refused, or a local error after the announce):
        // make sure the receiver ended it and no write of it is still in flight.
        if (!run.receiver_ended()) {
          (void)link_->channel().Send(protocol::Abort{out.delivery.id, status.message()});
        }
        if (Status quiet = run.Quiesce(std::chrono::seconds(5)); !quiet.ok()) {
          (void)Break(quiet.Annotate("after delivery " + out.delivery.id + " failed"));
        }
      }
      if (run.broken() && health_.ok()) {
        (void)Break(Status::Transport("session broken by delivery " + out.delivery.id + ": " +
                                      status.message()));
      }
      // A broken link may still have writes in flight that read this delivery's source:
      // close the fabric before the source's registration and mapping go away.
      if (!health_.ok()) (void)link_->Close();
    }
    out.status = status;
  }

  // A delivery that returned before the receiver ended it (e.g. --until transport): its
  // remaining receipts are read and dropped, because the receiver serves one delivery at
  // a time per connection.
  Status DrainPending(std::chrono::milliseconds timeout) {
    if (pending_id_.empty()) return Status::Ok();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pending_id_.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return Break(Status::Timeout("the receiver did not finish delivery " + pending_id_ +
                                     " within " + std::to_string(timeout.count()) + " ms"));
      }
      auto message = link_->channel().Receive(left);
      if (!message.ok()) {
        if (message.status().code() == ErrorCode::kTimeout) continue;
        return Break(Status::Transport("control connection to the receiver lost: " +
                                       message.status().message()));
      }
      if (const auto* r = std::get_if<protocol::Refuse>(&*message);
          r && r->delivery_id == pending_id_) {
        pending_id_.clear();
      } else if (const auto* w = std::get_if<protocol::Receipt>(&*message);
                 w && w->delivery_id == pending_id_) {
        auto receipt = ReceiptFromJson(w->json);
        if (receipt.ok() && receipt->rung == ReceiptRung::kRetained) pending_id_.clear();
      } else {
        return Break(Status::Malformed(std::string("unexpected '") +
                                       std::string(protocol::MessageTypeName(*message)) +
                                       "' while delivery " + pending_id_ + " was finishing"));
      }
    }
    return Status::Ok();
  }

  Status Break(Status why) {
    if (health_.ok()) health_ = std::move(why);
    return health_;
  }

  Status Close() {
    (void)Break(Status::InvalidArgument("the session was closed"));
    return link_->Close();
  }

  std::optional<receipt::Identity> identity_;
  std::optional<sender::DigestCache> cache_;  // beside the identity, when there is one
  std::unique_ptr<Link> link_;
  Status health_;
  std::string pending_id_;  // returned to the caller, not yet ended by the receiver
  std::string last_id_;     // the last delivery announced
  uint64_t deliveries_ = 0;
  std::optional<uint64_t> corrupt_chunk_;  // tests only: sender/test_seams.h
};

Sender::Sender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sender::~Sender() = default;

Result<std::unique_ptr<Sender>> Sender::Connect(const SessionOptions& options) {
  WRIT_ASSIGN_OR_RETURN(auto impl, Impl::Connect(options));
  return std::unique_ptr<Sender>(new Sender(std::move(impl)));
}

namespace {

// Opens the file and prepares the delivery into `out` / `prepared`.
Status OpenAndPrepare(const std::string& path, const DeliveryOptions& options,
                      const sender::DigestCache* cache, DeliveryOutcome& out,
                      PreparedDelivery& prepared) {
  auto source = DeliverySource::Open(path);
  if (!source.ok()) return source.status();
  return sender::Prepare(std::move(source).value(), options, cache, out, prepared);
}

}  // namespace

DeliveryOutcome Sender::Send(const std::string& path, const DeliveryOptions& options) {
  DeliveryOutcome out;
  out.status = sender::CheckDeliveryOptions(options);
  if (!out.status.ok()) return out;
  PreparedDelivery prepared;
  out.status =
      OpenAndPrepare(path, options, impl_->cache_ ? &*impl_->cache_ : nullptr, out, prepared);
  if (out.status.ok()) impl_->Deliver(options, prepared, out);
  return out;
}

DeliveryOutcome Sender::SendBytes(std::span<const uint8_t> bytes, const DeliveryOptions& options) {
  DeliveryOutcome out;
  out.status = sender::CheckDeliveryOptions(options);
  if (out.status.ok() && options.id.empty()) {
    out.status = Status::InvalidArgument("SendBytes needs a delivery id");
  }
  if (!out.status.ok()) return out;
  PreparedDelivery prepared;
  out.status = sender::Prepare(DeliverySource::FromBytes(bytes, options.id), options, nullptr, out,
                               prepared);
  if (out.status.ok()) impl_->Deliver(options, prepared, out);
  return out;
}

DeliveryOutcome Sender::SendRegions(std::span<const Region> regions,
                                    const DeliveryOptions& options) {
  DeliveryOutcome out;
  out.status = sender::CheckDeliveryOptions(options);
  if (out.status.ok() && options.id.empty()) {
    out.status = Status::InvalidArgument("SendRegions needs a delivery id");
  }
  if (!out.status.ok()) return out;
  auto list = sender::RegionList::Of(regions);
  if (!list.ok()) {
    out.status = list.status();
    return out;
  }
  PreparedDelivery prepared;
  out.status = sender::Prepare(DeliverySource::FromRegions(std::move(list).value(), options.id),
                               options, nullptr, out, prepared);
  if (out.status.ok()) impl_->Deliver(options, prepared, out);
  return out;
}

bool Sender::usable() const { return impl_->health_.ok(); }
const Status& Sender::health() const { return impl_->health_; }
const std::string& Sender::provider() const { return impl_->link_->hello().provider; }
uint64_t Sender::deliveries() const { return impl_->deliveries_; }
Status Sender::Close() { return impl_->Close(); }

SessionOptions SessionOptionsOf(const SendOptions& o) {
  SessionOptions s;
  s.to = o.to;
  s.provider = o.provider;
  s.depth = o.depth;
  s.identity_dir = o.identity_dir;
  return s;
}

DeliveryOptions DeliveryOptionsOf(const SendOptions& o) {
  DeliveryOptions d;
  d.id = o.id;
  d.chunk_size = o.chunk_size;
  d.rule = o.rule;
  d.until = o.until;
  d.retention = o.retention;
  d.level = o.level;
  d.max_attempts = o.max_attempts;
  d.stall_timeout = o.stall_timeout;
  d.progress = o.progress;
  d.source = o.source;
  d.digest = o.digest;
  return d;
}

namespace {

DeliveryOutcome SendOnce(const std::string& path, const SendOptions& options,
                         std::optional<uint64_t> corrupt_chunk) {
  DeliveryOutcome out;
  const DeliveryOptions delivery = DeliveryOptionsOf(options);
  out.status = sender::CheckDeliveryOptions(delivery);
  if (out.status.ok() && options.depth == 0) {
    out.status = Status::InvalidArgument("depth must be at least 1");
  }
  if (!out.status.ok()) return out;
  // The delivery is opened before the receiver is contacted; its digest, unless given or
  // cached, is computed as its chunks are written.
  PreparedDelivery prepared;
  std::optional<sender::DigestCache> cache;
  if (!options.identity_dir.empty()) cache.emplace(Sender::Impl::CachePath(options.identity_dir));
  out.status = OpenAndPrepare(path, delivery, cache ? &*cache : nullptr, out, prepared);
  if (!out.status.ok()) return out;
  prepared.corrupt_chunk = corrupt_chunk;
  auto session = Sender::Impl::Connect(SessionOptionsOf(options));
  if (!session.ok()) {
    out.status = session.status();
    return out;
  }
  (*session)->Deliver(delivery, prepared, out);
  return out;
}

}  // namespace

DeliveryOutcome Send(const std::string& path, const SendOptions& options) {
  return SendOnce(path, options, std::nullopt);
}

void sender::TestSeams::CorruptChunk(Sender& session, std::optional<uint64_t> chunk) {
  session.impl_->corrupt_chunk_ = chunk;
}

DeliveryOutcome sender::TestSeams::SendCorrupting(const std::string& path,
                                                  const SendOptions& options, uint64_t chunk) {
  return SendOnce(path, options, chunk);
}

}  // namespace writ
