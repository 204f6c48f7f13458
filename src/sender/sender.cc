// writ::Sender (a session of many deliveries) and writ::Send (a session of one).
#include "writ/sender.h"

#include <atomic>

#include "common/left_allocated.h"
#include "protocol/codec.h"
#include "receipt/identity.h"
#include "sender/delivery_run.h"
#include "sender/delivery_source.h"
#include "sender/digest_cache.h"
#include "sender/link.h"
#include "sender/session.h"
#include "sender/test_seams.h"

namespace writ {

using sender::DeliverySource;
using sender::Link;
using sender::PreparedDelivery;
using sender::Session;
using sender::Submission;

class Sender::Impl {
 public:
  static Result<std::unique_ptr<Impl>> Connect(const SessionOptions& options) {
    if (options.max_in_flight == 0)
      return Status::InvalidArgument("max_in_flight must be at least 1");
    auto impl = std::make_unique<Impl>();
    if (!options.identity_dir.empty()) {
      auto identity = receipt::Identity::LoadOrCreate(options.identity_dir);
      if (!identity.ok()) return identity.status().Annotate("sender identity");
      impl->identity_.emplace(std::move(identity).value());
      impl->cache_.emplace(CachePath(options.identity_dir));
    }
    WRIT_ASSIGN_OR_RETURN(auto link, Link::Open(options));
    impl->session_ =
        std::make_unique<Session>(std::move(link), impl->identity_ ? &*impl->identity_ : nullptr,
                                  impl->cache_ ? &*impl->cache_ : nullptr, options.max_in_flight);
    WRIT_RETURN_IF_ERROR(impl->session_->Start());
    return impl;
  }

  static std::string CachePath(const std::string& identity_dir) {
    return identity_dir + "/digest-cache";
  }

  // Queues a delivery whose source is already open (`sub->prepared`).
  DeliveryHandle Submit(std::unique_ptr<Submission> sub) {
    ++deliveries_;
    DeliveryHandle handle(sub->state);
    if (corrupt_chunk_) sub->prepared.corrupt_chunk = corrupt_chunk_;
    session_->Submit(std::move(sub));
    return handle;
  }

  // Closes the session and frees it, unless its thread is stuck in a call that has not
  // returned (Session::stuck): then everything that thread may come back to is left
  // allocated, on purpose, rather than freed under it.
  static void Retire(std::unique_ptr<Impl> impl) {
    if (impl == nullptr || impl->session_ == nullptr) return;
    (void)impl->session_->Close();
    if (impl->session_->stuck()) LeaveAllocated(impl);
  }

  // A submission that failed before it reached the session.
  static DeliveryHandle Failed(std::unique_ptr<Submission> sub) {
    DeliveryHandle handle(sub->state);
    sub->state->Set(std::move(sub->out));
    return handle;
  }

  // Declared before session_: the session's thread uses them until it is stopped.
  std::optional<receipt::Identity> identity_;
  std::optional<sender::DigestCache> cache_;  // beside the identity, when there is one
  std::unique_ptr<Session> session_;
  std::atomic<uint64_t> deliveries_{0};
  std::optional<uint64_t> corrupt_chunk_;  // tests only: sender/test_seams.h
};

Sender::Sender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sender::~Sender() { Impl::Retire(std::move(impl_)); }

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

DeliveryHandle Sender::Submit(const std::string& path, const DeliveryOptions& options) {
  auto sub = std::make_unique<Submission>();
  sub->options = options;
  sub->out.status = sender::CheckDeliveryOptions(options);
  if (sub->out.status.ok()) {
    sub->out.status = OpenAndPrepare(path, sub->options, impl_->cache_ ? &*impl_->cache_ : nullptr,
                                     sub->out, sub->prepared);
  }
  if (!sub->out.status.ok()) return Impl::Failed(std::move(sub));
  return impl_->Submit(std::move(sub));
}

DeliveryHandle Sender::SubmitBytes(std::span<const uint8_t> bytes, const DeliveryOptions& options) {
  auto sub = std::make_unique<Submission>();
  sub->options = options;
  sub->out.status = sender::CheckDeliveryOptions(options);
  if (sub->out.status.ok() && options.id.empty()) {
    sub->out.status = Status::InvalidArgument("SendBytes needs a delivery id");
  }
  if (sub->out.status.ok()) {
    sub->out.status = sender::Prepare(DeliverySource::FromBytes(bytes, options.id), sub->options,
                                      nullptr, sub->out, sub->prepared);
  }
  if (!sub->out.status.ok()) return Impl::Failed(std::move(sub));
  return impl_->Submit(std::move(sub));
}

DeliveryOutcome Sender::Send(const std::string& path, const DeliveryOptions& options) {
  return Submit(path, options).Wait();
}

DeliveryOutcome Sender::SendBytes(std::span<const uint8_t> bytes, const DeliveryOptions& options) {
  return SubmitBytes(bytes, options).Wait();
}

bool Sender::usable() const { return impl_->session_->health().ok(); }
Status Sender::health() const { return impl_->session_->health(); }
const std::string& Sender::provider() const { return impl_->session_->link().hello().provider; }
uint64_t Sender::deliveries() const { return impl_->deliveries_.load(); }
uint32_t Sender::max_in_flight() const { return impl_->session_->max_in_flight(); }
Status Sender::Close() { return impl_->session_->Close(); }

DeliveryHandle Sender::SubmitRegions(std::span<const Region> regions,
                                     const DeliveryOptions& options) {
  auto sub = std::make_unique<Submission>();
  sub->options = options;
  sub->out.status = sender::CheckDeliveryOptions(options);
  if (sub->out.status.ok() && options.id.empty()) {
    sub->out.status = Status::InvalidArgument("SendRegions needs a delivery id");
  }
  if (sub->out.status.ok()) {
    auto list = sender::RegionList::Of(regions);
    sub->out.status =
        list.ok()
            ? sender::Prepare(DeliverySource::FromRegions(std::move(list).value(), options.id),
                              sub->options, nullptr, sub->out, sub->prepared)
            : list.status();
  }
  if (!sub->out.status.ok()) return Impl::Failed(std::move(sub));
  return impl_->Submit(std::move(sub));
}

DeliveryOutcome Sender::SendRegions(std::span<const Region> regions,
                                    const DeliveryOptions& options) {
  return SubmitRegions(regions, options).Wait();
}

SessionOptions SessionOptionsOf(const SendOptions& o) {
  SessionOptions s;
  s.to = o.to;
  s.provider = o.provider;
  s.depth = o.depth;
  s.identity_dir = o.identity_dir;
  s.busy_poll = o.busy_poll;
  s.ring = o.ring;
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
  d.on_receipt = o.on_receipt;
  d.source = o.source;
  d.digest = o.digest;
  d.target = o.target;
  d.target_offset = o.target_offset;
  d.target_pages = o.target_pages;
  return d;
}

namespace {

DeliveryOutcome SendOnce(const std::string& path, const SendOptions& options,
                         std::optional<uint64_t> corrupt_chunk) {
  auto sub = std::make_unique<Submission>();
  sub->options = DeliveryOptionsOf(options);
  DeliveryOutcome& out = sub->out;
  out.status = sender::CheckDeliveryOptions(sub->options);
  if (out.status.ok() && options.depth == 0) {
    out.status = Status::InvalidArgument("depth must be at least 1");
  }
  if (!out.status.ok()) return out;
  // The delivery is opened before the receiver is contacted; its digest, unless given or
  // cached, is computed as its chunks are written.
  std::optional<sender::DigestCache> cache;
  if (!options.identity_dir.empty()) cache.emplace(Sender::Impl::CachePath(options.identity_dir));
  out.status = OpenAndPrepare(path, sub->options, cache ? &*cache : nullptr, out, sub->prepared);
  if (!out.status.ok()) return out;
  auto session = Sender::Impl::Connect(SessionOptionsOf(options));
  if (!session.ok()) {
    out.status = session.status();
    return out;
  }
  (*session)->corrupt_chunk_ = corrupt_chunk;
  DeliveryOutcome done = (*session)->Submit(std::move(sub)).Wait();
  Sender::Impl::Retire(std::move(session).value());
  return done;
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
