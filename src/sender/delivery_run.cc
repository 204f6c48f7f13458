#include "sender/delivery_run.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "common/hex.h"
#include "protocol/codec.h"
#include "receipt/canonical_json.h"
#include "receipt/context.h"
#include "receipt/signing.h"
#include "sender/addressed_announce.h"
#include "sender/request_signing.h"
#include "vocabulary/digest.h"

namespace writ::sender {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
// Where the queues have no wait object: idle polls with writes in flight before each poll
// also naps this long on the control fd (as the session's loop, session.cc).
constexpr uint32_t kSpinsBeforeNap = 2;
constexpr std::chrono::microseconds kNap{20};
// A staged chunk is read and digested in pieces this size, so each is hashed from the cache.
constexpr size_t kFoldPiece = 256 << 10;
// A transport receipt's text is about 1.3 KB unsigned, 1.6 KB signed: one allocation.
constexpr size_t kTransportReceiptRoom = 2048;
using protocol::RefuseReason;

int RungOrder(ReceiptRung rung) {
  switch (rung) {
    case ReceiptRung::kTransport: return 1;
    case ReceiptRung::kReceived: return 2;
    case ReceiptRung::kValidated: return 3;
    case ReceiptRung::kProcessed: return 4;
    case ReceiptRung::kRetained: return 0;  // not a rung: retention is orthogonal
  }
  return 0;
}

}  // namespace

Status StatusForRefusal(const protocol::Refuse& r, const std::string& id) {
  const std::string msg = "receiver refused delivery " +
                          (r.delivery_id.empty() ? id : r.delivery_id) + " (" +
                          std::string(protocol::RefuseReasonName(r.reason)) + "): " + r.detail;
  switch (r.reason) {
    case RefuseReason::kValidation: return Status::Validation(msg);
    case RefuseReason::kRetention: return Status::Retention(msg);
    default: return Status::Refused(msg);
  }
}

const std::string& IdOf(const protocol::Message& message) {
  static const std::string kNone;
  if (const auto* m = std::get_if<protocol::Grant>(&message)) return m->delivery_id;
  if (const auto* m = std::get_if<protocol::Receipt>(&message)) return m->delivery_id;
  if (const auto* m = std::get_if<protocol::Refuse>(&message)) return m->delivery_id;
  if (const auto* m = std::get_if<protocol::Abort>(&message)) return m->delivery_id;
  return kNone;
}

Status CheckDeliveryOptions(const DeliveryOptions& options) {
  if (options.chunk_size == 0) return Status::InvalidArgument("chunk size must be positive");
  if (options.max_attempts == 0) return Status::InvalidArgument("attempts must be at least 1");
  if (!options.digest.empty() && options.digest.size() != DigestSize(options.rule)) {
    return Status::InvalidArgument("digest: " + std::to_string(options.digest.size()) + " bytes, " +
                                   std::string(RuleName(options.rule)) + " needs " +
                                   std::to_string(DigestSize(options.rule)));
  }
  return CheckAddressedOptions(options);
}

Status CheckChunkFits(uint64_t chunk_size, uint64_t max_message_size, const std::string& provider) {
  if (chunk_size <= max_message_size) return Status::Ok();
  return Status::InvalidArgument("chunk size " + std::to_string(chunk_size) +
                                 " bytes exceeds the largest single write provider '" + provider +
                                 "' takes (max_msg_size " + std::to_string(max_message_size) +
                                 " bytes): choose a chunk size of at most that");
}

bool WantsZeroCopy(SourcePath path, const DeliverySource& source, uint64_t bytes,
                   bool provider_copies_with_cpu) {
  switch (path) {
    case SourcePath::kZeroCopy: return true;
    case SourcePath::kStaging: return false;
    case SourcePath::kAuto: break;
  }
  return bytes >= kZeroCopyMinBytes && !(source.mappable() && provider_copies_with_cpu);
}

Status Prepare(DeliverySource source, const DeliveryOptions& opt, const DigestCache* cache,
               DeliveryOutcome& out, PreparedDelivery& prepared) {
  prepared.source.emplace(std::move(source));
  DeliverySource& src = *prepared.source;
  out.delivery.id = opt.id.empty() ? src.name() : opt.id;
  out.delivery.bytes = src.size();
  out.delivery.rule = std::string(writ::RuleName(opt.rule));
  prepared.chunk_size =
      out.delivery.bytes == 0 ? opt.chunk_size : std::min(opt.chunk_size, out.delivery.bytes);
  prepared.chunk_size = AddressedChunkSize(opt, out.delivery.bytes, prepared.chunk_size);
  out.delivery.chunk_size = prepared.chunk_size;
  out.delivery.chunks = out.delivery.bytes == 0
                            ? 0
                            : (out.delivery.bytes + prepared.chunk_size - 1) / prepared.chunk_size;
  prepared.digest = opt.digest;
  out.digest_source = "given";
  if (prepared.digest.empty() && cache != nullptr && src.file_key()) {
    if (auto cached = cache->Find(*src.file_key(), opt.rule)) {
      prepared.digest = std::move(*cached);
      out.digest_source = "cached";
    }
  }
  if (prepared.digest.empty()) {
    prepared.compute_digest = true;
    out.digest_source = "computed";
  }
  out.delivery.digest = writ::ToHex(prepared.digest);  // empty until computed
  out.portion_request_ids.assign(out.delivery.chunks, 0);
  return Status::Ok();
}

Status ProveCachedDigest(const DeliveryOptions& options, const PreparedDelivery& prepared,
                         const DeliveryOutcome& out) {
  if (out.digest_source != "cached" || out.bytes_moved || !prepared.source) return Status::Ok();
  WRIT_ASSIGN_OR_RETURN(std::vector<uint8_t> now, prepared.source->Digest(options.rule));
  if (now == prepared.digest) return Status::Ok();
  return Status::Validation(
      "the file changed since its digest was cached: the receiver holds " + out.delivery.id +
      " with the cached " + out.delivery.rule + " digest " + writ::ToHex(prepared.digest) +
      ", the file now has " + writ::ToHex(now) +
      " (its size and times did not change: a write through a shared mapping?); its receipts "
      "are not for this content. The cache entry is dropped: send again to move the bytes");
}

void UpdateDigestCache(const DigestCache& cache, const DeliveryOptions& options,
                       const PreparedDelivery& prepared, const DeliveryOutcome& out) {
  if (!prepared.source || !prepared.source->file_key()) return;
  const FileKey& opened = *prepared.source->file_key();
  if (out.digest_source == "cached") {
    if (out.status.code() == ErrorCode::kValidation) (void)cache.Forget(opened, options.rule);
    return;
  }
  if (out.digest_source != "computed" || prepared.digester || prepared.digest.empty()) return;
  // Only a digest of one file version: unchanged from the open to the last read.
  auto now = prepared.source->CurrentKey();
  if (!now.ok() || !(*now == opened) || !OldEnoughToCache(opened, prepared.digest_started_ns)) {
    return;
  }
  (void)cache.Remember(opened, options.rule, prepared.digest);  // a cache is never an error
}

DeliveryRun::~DeliveryRun() { (void)source_region_.Close(); }

Status DeliveryRun::ChooseSourcePath() {
  DeliverySource& src = *prepared_.source;
  const bool want_zero_copy = WantsZeroCopy(opt_.source, src, out_.delivery.bytes,
                                            link_.node().provider().copies_with_cpu());
  if (want_zero_copy && src.mappable()) {
    if (Status mapped = src.Map(); !mapped.ok()) out_.source_note = mapped.message();
  }
  out_.source_path = "staging";
  if (want_zero_copy && !src.mapped().empty()) {
    auto region = link_.node().Register(const_cast<uint8_t*>(src.mapped().data()),
                                        src.mapped().size(), fabric::Access::kLocalSource);
    if (region.ok()) {
      source_region_ = std::move(region).value();
      out_.source_path = "zero-copy";
    } else {
      out_.source_note = "registering the source failed: " + region.status().message();
    }
  } else if (want_zero_copy && out_.source_note.empty() && out_.delivery.bytes > 0) {
    out_.source_note = "the source is not a regular file";
  } else if (!want_zero_copy && out_.delivery.bytes > 0) {
    out_.source_note = opt_.source == SourcePath::kStaging ? "staging asked for"
                       : out_.delivery.bytes < kZeroCopyMinBytes
                           ? "smaller than " + std::to_string(kZeroCopyMinBytes) + " bytes"
                           : "a file, and provider " + link_.node().provider().name() +
                                 " copies with the CPU: its mapping would only add page faults";
  }
  if (src.scatter_gather() && out_.delivery.bytes > 0) ChooseGather();
  // Staging serves every chunk without a registered source, and a corrupted chunk.
  if (out_.delivery.bytes > 0 && (!source_region_.open() || prepared_.corrupt_chunk)) {
    WRIT_RETURN_IF_ERROR(link_.EnsureStaging(std::min(chunk_size_, out_.delivery.bytes)));
  }
  return Status::Ok();
}

// Scatter-gather: regions of at least kZeroCopyMinBytes are registered and chunks over them
// written from them (docs/architecture.md); everything else is gathered into staging.
void DeliveryRun::ChooseGather() {
  const RegionList& list = *prepared_.source->regions();
  if (opt_.source != SourcePath::kStaging) {
    gather_.Register(link_.node(), list, kZeroCopyMinBytes);
  }
  const size_t non_empty = static_cast<size_t>(
      std::count_if(list.lengths().begin(), list.lengths().end(), [](uint64_t n) { return n; }));
  out_.source_path = gather_.count() > 0 && gather_.count() == non_empty ? "zero-copy" : "staging";
  out_.source_note = "scatter-gather: " + std::to_string(gather_.count()) + " of " +
                     std::to_string(non_empty) + " regions registered (those of at least " +
                     std::to_string(kZeroCopyMinBytes) + " bytes); chunks over at most " +
                     std::to_string(link_.node().provider().iov_limit()) +
                     " of them are written from them, the rest gathered into staging";
  if (!gather_.note().empty()) out_.source_note += "; " + gather_.note();
}

// A small delivery of one chunk, once the receiver granted a ring and a slot is free. One
// that does not fit, or finds every slot taken, goes the announce/grant way (it does not
// wait for a slot: the receiver frees slots as it copies them out, so waiting would only
// hold a delivery that can start now).
bool DeliveryRun::FitsRing() const {
  const RingSlots& ring = link_.ring();
  // A slot is a copy: a caller who asked for zero-copy keeps the announce path.
  // A slot is copied out into writ's store: an addressed delivery is placed in its target.
  return ring.granted() && opt_.target.empty() && out_.delivery.bytes > 0 &&
         out_.delivery.chunks == 1 && out_.delivery.bytes <= ring.ring().slot_size &&
         !prepared_.corrupt_chunk && opt_.source != SourcePath::kZeroCopy;
}

Status DeliveryRun::DeliverInSlot(uint32_t slot) {
  const protocol::Ring& ring = link_.ring().ring();
  const uint64_t bytes = out_.delivery.bytes;
  ring_slot_ = slot;
  out_.ring = true;
  out_.source_path = "staging";
  out_.source_note = "standing window: ring slot " + std::to_string(slot);
  // Read once into the registered slot staging, digested from there.
  const std::span<uint8_t> staged(link_.ring().slot(slot), bytes);
  if (Status read = prepared_.source->Read(0, staged); !read.ok()) {
    link_.ring().Free(protocol::SlotsFree{ring.window_id, {slot}});  // nothing was written
    return read;
  }
  if (Status folded = FoldThrough(0, staged.data()); !folded.ok()) return Fail(folded);
  if (Status digested = FinishDigest(); !digested.ok()) return Fail(digested);
  // Built inside the message it is sent as: sending a Deliver would copy it into one.
  protocol::Message message(std::in_place_type<protocol::Deliver>);
  protocol::Deliver& deliver = std::get<protocol::Deliver>(message);
  deliver.slot = slot;
  // The announce carries the digest just computed: its one signature commits to it too.
  WRIT_RETURN_IF_ERROR(BuildAnnounce(deliver.announce));
  pending_deliver_ = std::move(message);
  grants_[ring.window_id] = protocol::Grant{out_.delivery.id,
                                            ring.window_id,
                                            ring.remote_address + uint64_t{slot} * ring.slot_size,
                                            ring.key,
                                            ring.slot_size,
                                            0,
                                            1};
  ready_.emplace_back(0, ring.window_id);
  return PostReady();
}

// The slot's write, then its `deliver` at once: the receiver takes them in either order.
// Where notifications name no writer, the `deliver` waits for the write's completion
// (Step): the receiver then copies the slot out on any notification naming it.
Status DeliveryRun::PostSlot(WriteSlot& slot, size_t index) {
  const auto [chunk, window] = ready_[ready_next_++];
  slot.chunk = chunk;
  slot.window = window;
  slot.attempt = 0;
  slot.length = out_.delivery.bytes;
  slot.gathered = false;
  slot.staged = true;
  WRIT_RETURN_IF_ERROR(Post(slot, index));
  if (attests_writes_) return Status::Ok();
  return SendDeliver();
}

Status DeliveryRun::SendDeliver() {
  if (!pending_deliver_) return Status::Ok();
  if (sign_later_) {
    deliver_due_ = true;
    return Status::Ok();
  }
  Status sent = link_.channel().Send(*pending_deliver_);
  pending_deliver_.reset();
  if (!sent.ok()) return Broken(Status::Transport(sent.message()));
  announced_ = true;
  last_progress_ = Clock::now();
  return Status::Ok();
}

Status DeliveryRun::Run() {
  WRIT_RETURN_IF_ERROR(Start());
  return Loop();
}

Status DeliveryRun::Start() {
  if (prepared_.compute_digest && !prepared_.digester && prepared_.digest.empty()) {
    WRIT_ASSIGN_OR_RETURN(prepared_.digester, vocabulary::Digester::Create(opt_.rule));
    prepared_.digest_started_ns = RealtimeNowNs();
  }
  chunk_size_ = prepared_.chunk_size;
  const fabric::ProviderInfo& provider = link_.node().provider();
  WRIT_RETURN_IF_ERROR(CheckChunkFits(chunk_size_, provider.max_message_size(), provider.name()));
  granted_level_ = link_.node().provider().Grant(opt_.level);
  attests_writes_ = provider.writes_need_attestation();
  out_.context = receipt::ContextFor(link_.node().provider(), granted_level_, true);
  if (FitsRing()) {
    if (auto slot = link_.ring().Take()) return DeliverInSlot(*slot);
  }
  WRIT_RETURN_IF_ERROR(ChooseSourcePath());
  return Announce();
}

Status DeliveryRun::Announce() {
  if (sign_later_) return BuildAnnounce(pending_announce_.emplace());
  protocol::Announce announce;
  WRIT_RETURN_IF_ERROR(BuildAnnounce(announce));
  return SendAnnounce(announce);
}

protocol::Announce* DeliveryRun::AnnounceToSign() {
  if (!sign_later_) return nullptr;
  if (pending_announce_) return &*pending_announce_;
  if (pending_deliver_) return &std::get<protocol::Deliver>(*pending_deliver_).announce;
  return nullptr;
}

Status DeliveryRun::AnnounceSigned() {
  sign_later_ = false;
  if (pending_announce_) {
    Status sent = SendAnnounce(*pending_announce_);
    pending_announce_.reset();
    return sent;
  }
  if (!deliver_due_) return Status::Ok();
  deliver_due_ = false;
  return SendDeliver();
}

Status DeliveryRun::SendAnnounce(const protocol::Announce& announce) {
  if (Status sent = link_.channel().Send(announce); !sent.ok()) {
    // An invalid announce is not sent at all; anything else leaves the stream unknown.
    if (sent.code() == ErrorCode::kInvalidArgument) return sent;
    return Broken(Status::Transport(sent.message()));
  }
  announced_ = true;
  last_progress_ = Clock::now();
  return Status::Ok();
}

Status DeliveryRun::BuildAnnounce(protocol::Announce& announce) {
  announce.delivery_id = out_.delivery.id;
  announce.bytes = out_.delivery.bytes;
  announce.chunk_size = chunk_size_;
  announce.rule = opt_.rule;
  announce.digest = prepared_.digest;
  announce.until = opt_.until;
  announce.retention = opt_.retention.value_or(RetentionClass::kVolatile);
  announce.sender_fabric_address = link_.local_address();
  announce.region_lengths = prepared_.source->region_lengths();
  AddressAnnounce(opt_, announce);
  if (identity_) {
    // Signed for this receiver only: its id is part of the signed bytes. Left to the
    // session when it signs the announces it starts together.
    WRIT_RETURN_IF_ERROR(sign_later_
                             ? PrepareAnnounceSignature(*identity_, announce)
                             : SignAnnounce(*identity_, link_.hello().receiver_id, announce));
    announce_nonce_ = announce.nonce;
  }
  return Status::Ok();
}

Status DeliveryRun::Loop() {
  while (!Done()) {
    std::chrono::microseconds wait = 0us;
    wait_fds_.clear();
    if (CanPost()) {
      wait = 0us;
    } else if (link_.busy_poll()) {
      std::this_thread::yield();  // --poll busy: never sleeps, polls again at once
    } else if (WritesIdle()) {
      wait = 20ms;  // only the receiver can move things on
    } else if (link_.node().can_wait()) {
      // Block until a completion or the receiver: on a small machine the receiver's
      // threads need the core this loop would otherwise burn. No idle polls first (as the
      // session's loop): fi_trywait finds a completion already there.
      auto prepared = link_.node().PrepareWait(wait_fds_);
      if (!prepared.ok()) return Broken(prepared.status());
      wait = *prepared ? std::chrono::microseconds(20ms) : 0us;
    } else if (idle_spins_ < kSpinsBeforeNap) {
      wait = 0us;
    } else {
      wait = kNap;
    }
    WRIT_RETURN_IF_ERROR(ReadControl(wait));
    if (Done()) break;
    WRIT_RETURN_IF_ERROR(PostReady());
    WRIT_RETURN_IF_ERROR(PollCompletions());
    WRIT_RETURN_IF_ERROR(Step());
  }
  return Status::Ok();
}

// Where notifications name no writer: the chunks whose writes completed since the last turn,
// one `written` per window, and a ring slot's `deliver` once its write completed.
Status DeliveryRun::SendAttestations() {
  if (ring_slot_ && chunks_done_ == out_.delivery.chunks) return SendDeliver();
  for (size_t i = 0; i < written_.size();) {
    protocol::Written written{out_.delivery.id, written_[i].first, {}};
    for (; i < written_.size() && written_[i].first == written.window_id; ++i) {
      written.chunks.push_back(written_[i].second);
    }
    if (Status sent = link_.channel().Send(written); !sent.ok()) {
      return Broken(Status::Transport(sent.message()));
    }
  }
  written_.clear();
  return Status::Ok();
}

Status DeliveryRun::Step() {
  WRIT_RETURN_IF_ERROR(PostReady());
  if (attests_writes_) WRIT_RETURN_IF_ERROR(SendAttestations());
  if (!commit_sent_ && chunks_done_ == out_.delivery.chunks && out_.bytes_moved) {
    WRIT_RETURN_IF_ERROR(SendTransportReceiptAndCommit());
  }
  if (Clock::now() - last_progress_ > opt_.stall_timeout) {
    return Broken(
        Status::Timeout("no progress for " + std::to_string(opt_.stall_timeout.count()) + " ms"));
  }
  return Status::Ok();
}

// Reads `chunk` into its staging slot. When it is the digest's next chunk, each piece is
// folded right after it is read, while it is still in the cache: the source is read once.
Status DeliveryRun::Stage(uint64_t chunk, std::span<uint8_t> bytes) {
  PreparedDelivery& p = prepared_;
  const uint64_t offset = chunk * chunk_size_;
  if (!p.digester || p.digested_chunks != chunk) return p.source->Read(offset, bytes);
  for (size_t done = 0; done < bytes.size();) {
    const std::span<uint8_t> piece = bytes.subspan(done, std::min(kFoldPiece, bytes.size() - done));
    WRIT_RETURN_IF_ERROR(p.source->Read(offset + done, piece));
    p.digester->Update(piece);
    done += piece.size();
  }
  ++p.digested_chunks;
  return Status::Ok();
}

// Folds chunks up to and including `chunk` into the delivery's digest, in chunk order.
// `staged` holds that chunk's bytes when they were just read; an earlier chunk not folded
// yet (granted out of order) is read from the source.
Status DeliveryRun::FoldThrough(uint64_t chunk, const uint8_t* staged) {
  PreparedDelivery& p = prepared_;
  if (!p.digester) return Status::Ok();
  for (; p.digested_chunks <= chunk && p.digested_chunks < out_.delivery.chunks;
       ++p.digested_chunks) {
    const uint64_t c = p.digested_chunks;
    const uint64_t length = std::min(chunk_size_, out_.delivery.bytes - c * chunk_size_);
    if (c == chunk && staged != nullptr) {
      p.digester->Update(std::span<const uint8_t>(staged, length));
    } else {
      WRIT_RETURN_IF_ERROR(p.source->Fold(*p.digester, c * chunk_size_, length));
    }
  }
  return Status::Ok();
}

Status DeliveryRun::FinishDigest() {
  if (!prepared_.digester) return Status::Ok();
  if (out_.delivery.chunks > 0) {
    WRIT_RETURN_IF_ERROR(FoldThrough(out_.delivery.chunks - 1, nullptr));
  }
  prepared_.digest = prepared_.digester->Finish();
  prepared_.digester.reset();
  out_.delivery.digest = writ::ToHex(prepared_.digest);
  return Status::Ok();
}

Status DeliveryRun::SendTransportReceiptAndCommit() {
  if (Status digested = FinishDigest(); !digested.ok()) return Fail(digested);
  // The commit goes first: the receiver validates while this side signs its receipt. A
  // delivery written into a ring slot has none: its `deliver`'s announce carried the digest.
  if (!ring_slot_) {
    protocol::Commit commit{out_.delivery.id, prepared_.digest, {}};
    if (identity_) {
      WRIT_RETURN_IF_ERROR(
          SignCommit(*identity_, link_.hello().receiver_id, announce_nonce_, commit));
    }
    if (Status sent = link_.channel().Send(commit); !sent.ok()) {
      return Broken(Status::Transport(sent.message()));
    }
  }
  commit_sent_ = true;
  last_progress_ = Clock::now();
  // Written in a receipt this thread reuses (its strings keep their room) and kept as its
  // text, like the receiver's: one allocation for the text instead of one per field.
  thread_local Receipt transport;
  transport.rung = ReceiptRung::kTransport;
  transport.delivery = out_.delivery;
  transport.observer = "sender";
  transport.issuer = link_.issuer();
  receipt::AssignNowRfc3339(transport.issued_at);
  transport.context = out_.context;
  transport.observed_chunks = out_.delivery.chunks;
  const uint64_t records = out_.work_completions.size();
  std::string& statement = transport.statement;
  statement.assign("each of the ").append(std::to_string(out_.delivery.chunks));
  statement.append(" chunk write requests completed with success at completion level ");
  statement.append(out_.context.completion_level).append(" (").append(std::to_string(records));
  statement.append(" completion records read)");
  transport.does_not_establish.assign(fabric::CompletionLevelDoesNotGuarantee(granted_level_));
  transport.signature.reset();
  if (sign_receipt_later_) {
    unsigned_transport_ = receipt::Unsigned(transport);
    return Status::Ok();
  }
  if (identity_) WRIT_RETURN_IF_ERROR(receipt::SignReceipt(transport, *identity_));
  std::string text;
  text.reserve(kTransportReceiptRoom);
  receipt::AppendReceiptJson(text, transport);
  NoteReceipt(ReceiptRung::kTransport, {});
  out_.receipts.AddChecked(ReceiptRung::kTransport, std::move(text));
  return Status::Ok();
}

std::optional<receipt::UnsignedReceipt> DeliveryRun::TakeTransportReceiptToSign() {
  std::optional<receipt::UnsignedReceipt> taken = std::move(unsigned_transport_);
  unsigned_transport_.reset();
  return taken;
}

void DeliveryRun::OnTransportReceiptSigned(std::string json) {
  NoteReceipt(ReceiptRung::kTransport, {});
  out_.receipts.AddChecked(ReceiptRung::kTransport, std::move(json));
}

Status DeliveryRun::ReadControl(std::chrono::microseconds wait) {
  // The control connection first, then whatever PrepareWait asked to be watched (once).
  poll_set_.assign(1, pollfd{link_.channel().fd(), POLLIN, 0});
  poll_set_.insert(poll_set_.end(), wait_fds_.begin(), wait_fds_.end());
  wait_fds_.clear();
  const timespec ts{static_cast<time_t>(wait.count() / 1000000),
                    static_cast<long>(wait.count() % 1000000) * 1000};
  const int ready = ppoll(poll_set_.data(), poll_set_.size(), &ts, nullptr);
  if (ready <= 0 || poll_set_[0].revents == 0) return Status::Ok();
  idle_spins_ = 0;
  auto message = link_.channel().Receive(10s);
  while (message.ok()) {
    last_progress_ = Clock::now();
    WRIT_RETURN_IF_ERROR(OnMessage(*message));
    if (Done()) return Status::Ok();
    message = link_.channel().Receive(0ms);
  }
  if (message.status().code() == ErrorCode::kTimeout) return Status::Ok();
  return Broken(
      Status::Transport("control connection to the receiver lost: " + message.status().message()));
}

Status DeliveryRun::OnMessage(protocol::Message& message) {
  if (const auto* ring = std::get_if<protocol::Ring>(&message)) return link_.AdoptRing(*ring);
  if (const auto* freed = std::get_if<protocol::SlotsFree>(&message)) {
    link_.ring().Free(*freed);
    return Status::Ok();
  }
  if (auto* batch = std::get_if<protocol::Receipts>(&message)) {
    // Receipts ready at the same moment (protocol 3): each as if it came alone (a stale
    // one among them is skipped alone).
    for (protocol::Receipt& one : batch->receipts) {
      protocol::Message single(std::move(one));
      WRIT_RETURN_IF_ERROR(OnMessage(single));
    }
    return Status::Ok();
  }
  const std::string& id = out_.delivery.id;
  // Late grants or refusals of the session's previous delivery (e.g. one it aborted).
  if (!stale_id_.empty() && stale_id_ != id && IdOf(message) == stale_id_) return Status::Ok();
  if (const auto* grant = std::get_if<protocol::Grant>(&message)) {
    const uint64_t chunks = out_.delivery.chunks;
    if (grant->delivery_id != id || grant->window_id == 0 || grant->window_id > 0xFFFF ||
        grant->first_chunk >= chunks || grant->chunk_count > chunks - grant->first_chunk ||
        grant->length < std::min(out_.delivery.bytes - grant->first_chunk * chunk_size_,
                                 uint64_t{grant->chunk_count} * chunk_size_)) {
      return Broken(Status::Malformed("the receiver sent an inconsistent grant (window " +
                                      std::to_string(grant->window_id) + ")"));
    }
    grants_[grant->window_id] = *grant;
    for (uint32_t i = 0; i < grant->chunk_count; ++i) {
      ready_.emplace_back(grant->first_chunk + i, grant->window_id);
    }
    return Status::Ok();
  }
  if (auto* wire = std::get_if<protocol::Receipt>(&message)) {
    // Read strictly but not copied: the outcome keeps the text, read into a Receipt only
    // when the application reads it (ReceiptList).
    auto receipt = ReadReceiptFacts(wire->json);
    if (!receipt.ok()) return Broken(receipt.status().Annotate("receipt from the receiver"));
    if (receipt->delivery_id != id || receipt->bytes != out_.delivery.bytes ||
        receipt->digest != out_.delivery.digest) {
      return Broken(Status::Malformed(
          "the receiver sent a receipt about another object (" + std::string(receipt->delivery_id) +
          ", " + std::to_string(receipt->bytes) + " bytes, " + std::string(receipt->digest) + ")"));
    }
    // A receipt before any grant and before our commit: the receiver already held this
    // content. Without chunks, a fresh delivery is `received` at once, so only a higher
    // rung says so.
    if (chunks_done_ == 0 && grants_.empty() && !commit_sent_ &&
        (out_.delivery.chunks > 0 || receipt->rung != ReceiptRung::kReceived)) {
      out_.bytes_moved = false;
    }
    if (receipt->rung == ReceiptRung::kRetained) receiver_ended_ = true;
    NoteReceipt(receipt->rung, receipt->retention);
    out_.receipts.AddChecked(receipt->rung, std::move(wire->json));
    return Status::Ok();
  }
  if (const auto* refuse = std::get_if<protocol::Refuse>(&message)) {
    // Answers only a commit: before ours, it is about an earlier one (an empty delivery
    // the receiver already held may have been committed in a race with its receipts).
    if (refuse->reason == RefuseReason::kUnknownDelivery && !commit_sent_) return Status::Ok();
    receiver_ended_ = true;
    // A refusal naming no delivery, or of a malformed stream, precedes a dropped connection.
    if (refuse->delivery_id.empty() || refuse->reason == RefuseReason::kMalformed) {
      return Broken(StatusForRefusal(*refuse, id));
    }
    Status refused = StatusForRefusal(*refuse, id);
    if (refuse->reason == RefuseReason::kValidation && !prepared_.digest.empty()) {
      // The receiver names no digest (security.md); this side knows the one it stated.
      refused = refused.Annotate("the " + out_.digest_source + " " + out_.delivery.rule +
                                 " digest " + out_.delivery.digest + " was refused");
    }
    return Fail(refused);
  }
  if (const auto* abort = std::get_if<protocol::Abort>(&message)) {
    return Broken(Status::Transport("the receiver aborted: " + abort->detail));
  }
  return Broken(Status::Malformed(std::string("unexpected '") +
                                  std::string(protocol::MessageTypeName(message)) +
                                  "' message from the receiver"));
}

void DeliveryRun::NoteReceipt(ReceiptRung rung, std::string_view retention) {
  if (opt_.on_receipt) opt_.on_receipt(rung);
  if (rung == ReceiptRung::kRetained) {
    auto cls = writ::ParseRetention(retention);
    if (cls.ok() && (!out_.reached_retention || *cls > *out_.reached_retention)) {
      out_.reached_retention = *cls;
    }
  } else if (!out_.reached_rung || RungOrder(rung) > RungOrder(*out_.reached_rung)) {
    out_.reached_rung = rung;
  }
}

bool DeliveryRun::WritesIdle() const {
  const auto& slots = link_.write_slots();
  return std::none_of(slots.begin(), slots.end(),
                      [this](const WriteSlot& s) { return s.owner == this; });
}

bool DeliveryRun::Done() const {
  if (!WritesIdle()) return false;
  const int wanted = static_cast<int>(opt_.until);  // Rung values order like RungOrder
  if (!out_.reached_rung || RungOrder(*out_.reached_rung) < wanted) return false;
  const bool await_retention = opt_.retention.has_value() || opt_.until >= Rung::kValidated;
  if (!await_retention) return true;
  const RetentionClass want = opt_.retention.value_or(RetentionClass::kVolatile);
  return out_.reached_retention && *out_.reached_retention >= want;
}

std::string DeliveryRun::LastRung() const {
  std::string last = out_.reached_rung ? std::string(ReceiptRungName(*out_.reached_rung)) : "none";
  if (out_.reached_retention) {
    last += ", retained " + std::string(writ::RetentionName(*out_.reached_retention));
  }
  return last;
}

}  // namespace writ::sender
