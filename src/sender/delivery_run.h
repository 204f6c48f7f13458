// One delivery over a session's Link: announce, write the chunks into the granted
// windows, commit, and collect receipts until the requested rung and retention.
#pragma once

#include <poll.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/memory_region.h"
#include "fabric/work_completion.h"
#include "protocol/messages.h"
#include "receipt/identity.h"
#include "receipt/signing.h"
#include "sender/delivery_source.h"
#include "sender/digest_cache.h"
#include "sender/link.h"
#include "sender/region_source.h"
#include "writ/sender.h"

namespace writ::sender {

// What a delivery needs before it touches the network: its source, its announced
// shape and, when known already, its digest (filled into `out.delivery`).
struct PreparedDelivery {
  std::optional<DeliverySource> source;
  // Known before the announce (given by the caller, or cached), or else computed by
  // `digester` as the chunks are written, in chunk order, and complete before the commit.
  std::vector<uint8_t> digest;
  // The digest is to be computed: the run makes `digester` as it starts, not Prepare, so
  // that of thousands submitted at once only those running hold one.
  bool compute_digest = false;
  std::unique_ptr<vocabulary::Digester> digester;
  uint64_t digested_chunks = 0;   // chunks [0, digested_chunks) are in `digester`
  int64_t digest_started_ns = 0;  // CLOCK_REALTIME before the first byte was read
  uint64_t chunk_size = 0;        // the requested one, or the whole delivery when smaller
  // Tests only (src/sender/test_seams.h): flip one byte of this chunk after it was
  // digested; that chunk always goes through staging, so the source is never touched.
  std::optional<uint64_t> corrupt_chunk;
};

Status CheckDeliveryOptions(const DeliveryOptions& options);
// One chunk is one RDMA Write: it may not exceed the provider's largest message
// (ep_attr->max_msg_size; 2 GiB on rxe, effectively unbounded on tcp and shm).
Status CheckChunkFits(uint64_t chunk_size, uint64_t max_message_size, const std::string& provider);
// Whether a delivery's chunks are written straight from its source's memory (registered
// once) rather than copied into staging buffers first. kAuto: from kZeroCopyMinBytes up, for
// memory the caller already holds; for a file (whose mapping costs a page fault per few
// pages on first touch) only where a NIC reads registered memory itself: a provider that
// copies with the CPU copies from a staging buffer as well as from the mapping
// (docs/benchmarks.md, "The sender's source").
bool WantsZeroCopy(SourcePath path, const DeliverySource& source, uint64_t bytes,
                   bool provider_copies_with_cpu);
// Fills `out.delivery`, and takes the digest from the options or `cache` (may be null), or
// prepares to compute it. The source is mapped later, when the provider is known.
Status Prepare(DeliverySource source, const DeliveryOptions& options, const DigestCache* cache,
               DeliveryOutcome& out, PreparedDelivery& prepared);
// The proof a cache hit may not skip: when the receiver answered a cached digest from its
// store without the bytes moving, the file is digested now and must hold that digest (a
// write through a shared mapping can leave the cache's key unchanged). Validation naming
// both digests otherwise; Ok when the bytes moved (the receiver validated them) or the
// digest was not cached.
Status ProveCachedDigest(const DeliveryOptions& options, const PreparedDelivery& prepared,
                         const DeliveryOutcome& out);
// Records a digest computed over an unchanged file in `cache`, or drops a cached one the
// receiver refused.
void UpdateDigestCache(const DigestCache& cache, const DeliveryOptions& options,
                       const PreparedDelivery& prepared, const DeliveryOutcome& out);

// Why the receiver refused a delivery, as a Status of the matching code.
Status StatusForRefusal(const protocol::Refuse& refuse, const std::string& id);
// The delivery a control message is about; empty for messages about none (the message's
// own field, not a copy).
const std::string& IdOf(const protocol::Message& message);

// One delivery's state. `Run` drives it alone over the link; a Session (session.h) drives
// many at once through Start, OnMessage, Step and OnRecord, sharing the link's write slots.
class DeliveryRun {
 public:
  DeliveryRun(Link& link, const receipt::Identity* identity, const DeliveryOptions& options,
              PreparedDelivery& prepared, DeliveryOutcome& out, const std::string& stale_id)
      : link_(link),
        identity_(identity),
        opt_(options),
        prepared_(prepared),
        out_(out),
        stale_id_(stale_id) {
    out_.bytes_moved = true;  // until the receiver says it held the content already
  }
  ~DeliveryRun();

  Status Run();

  // Checks, chooses the source path and sends the announce.
  Status Start();
  // Called before Start by a session that signs the announces it starts together
  // (SignAnnounces): Start then leaves a signed sender's announce unsigned and unsent.
  void SignAnnounceLater() { sign_later_ = identity_ != nullptr; }
  // Likewise for its transport receipt: left unsigned for the session to sign with the
  // others made in the same turn (receipt::SignUnsignedJsonOnly), then handed back.
  void SignTransportReceiptLater() { sign_receipt_later_ = identity_ != nullptr; }
  // Its transport receipt, unsigned, once (nullopt before it was made, or once taken).
  std::optional<receipt::UnsignedReceipt> TakeTransportReceiptToSign();
  // Its transport receipt signed: kept in the outcome.
  void OnTransportReceiptSigned(std::string json);
  // The announce Start built and left to be signed, or nullptr.
  protocol::Announce* AnnounceToSign();
  // Its announce was signed: sent now (a ring `deliver` now if its write was posted, else
  // once it is).
  Status AnnounceSigned();
  // A control message about this delivery; a receipt's text is moved into the outcome.
  Status OnMessage(protocol::Message& message);
  // Posts granted chunks into free write slots, commits once every chunk landed, and
  // fails a delivery that made no progress for its stall timeout.
  Status Step();
  // The completion record of the write in `slot` (one of this delivery's); a write that
  // finally failed breaks the session (write_failed()).
  Status OnRecord(WriteSlot& slot, const fabric::WorkCompletion& record);
  // A granted chunk is waiting and a write slot is free.
  bool CanPost() const;
  bool Done() const;
  bool WritesIdle() const;
  bool write_failed() const { return write_failed_; }
  // `status` naming this delivery and the last rung it reached.
  Status Fail(Status status) const {
    return status.Annotate("delivery " + out_.delivery.id + ", last rung reached: " + LastRung());
  }
  const std::string& id() const { return out_.delivery.id; }

  bool announced() const { return announced_; }
  // The session can no longer be trusted (connection lost, error completion, stall,
  // protocol violation).
  bool broken() const { return broken_ || saw_error_record_; }
  // The receiver has ended this delivery: it refused it or sent its retained receipt.
  bool receiver_ended() const { return receiver_ended_; }
  // Waits until no write of this delivery is in flight; an error record or the deadline
  // makes the session broken.
  Status Quiesce(std::chrono::milliseconds timeout);

 private:
  Status ChooseSourcePath();
  void ChooseGather();
  // The announce as sent (signed when the session has an identity).
  Status BuildAnnounce(protocol::Announce& announce);
  Status Announce();
  Status SendAnnounce(const protocol::Announce& announce);
  // Standing windows: whether this delivery goes into a ring slot, and taking one: its
  // bytes copied into the slot's staging while digested, the `deliver` prepared; the write
  // is posted like a granted chunk, and the deliver sent right after it.
  bool FitsRing() const;
  Status DeliverInSlot(uint32_t slot);
  Status PostSlot(WriteSlot& slot, size_t index);
  Status SendDeliver();
  Status SendAttestations();
  Status Loop();
  Status SendTransportReceiptAndCommit();
  Status ReadControl(std::chrono::microseconds wait);
  Status PostReady();
  Status Stage(uint64_t chunk, std::span<uint8_t> bytes);
  Status FoldThrough(uint64_t chunk, const uint8_t* staged);
  Status FinishDigest();
  // Posts the slot's chunk; a failure breaks the run.
  Status Post(WriteSlot& slot, size_t index);
  // Posts the slot's chunk, and nothing else: a failure is the caller's to report.
  Status PostWrite(WriteSlot& slot, size_t index);
  Status PollCompletions();
  // Records a completion in the outcome and frees its slot; true when it succeeded.
  bool TakeRecord(WriteSlot& slot, const fabric::WorkCompletion& record);
  // After a failed write: posts it again, or fails when it had its last attempt.
  Status RetryOrFail(WriteSlot& slot);
  // What a receipt of `rung` reached (its retention class's name on the retained rung).
  void NoteReceipt(ReceiptRung rung, std::string_view retention);
  std::string LastRung() const;
  Status Broken(Status status) {
    broken_ = true;
    return Fail(std::move(status));
  }

  Link& link_;
  const receipt::Identity* identity_;
  const DeliveryOptions& opt_;
  PreparedDelivery& prepared_;
  DeliveryOutcome& out_;
  const std::string stale_id_;  // the session's previous delivery: its late messages are dropped
  std::vector<uint8_t> announce_nonce_;  // a signed announce's: its commit is signed with it
  uint64_t chunk_size_ = 0;
  CompletionLevel granted_level_ = CompletionLevel::kDelivery;
  fabric::MemoryRegion source_region_;  // the zero-copy source, when used
  RegisteredRegions gather_;            // scatter-gather regions written without a copy
  std::map<uint32_t, protocol::Grant> grants_;
  std::vector<std::pair<uint64_t, uint32_t>> ready_;  // (chunk, window), in grant order
  size_t ready_next_ = 0;
  uint64_t chunks_done_ = 0;
  uint64_t bytes_done_ = 0;
  uint32_t idle_spins_ = 0;                             // polls in a row that found no completion
  std::optional<uint32_t> ring_slot_;                   // the ring slot it was written into
  std::optional<protocol::Message> pending_deliver_;    // a Deliver, sent once its write is posted
  std::optional<protocol::Announce> pending_announce_;  // built by Start, awaiting its signature
  bool sign_later_ = false;                             // SignAnnounceLater, until AnnounceSigned
  bool deliver_due_ = false;  // the ring write was posted while the `deliver` awaited signing
  bool sign_receipt_later_ = false;  // SignTransportReceiptLater
  std::optional<receipt::UnsignedReceipt> unsigned_transport_;
  // Where notifications name no writer (ProviderInfo::writes_need_attestation): completed
  // writes are attested over the control connection, (window, chunk in window) each.
  bool attests_writes_ = false;
  std::vector<std::pair<uint32_t, uint32_t>> written_;
  bool announced_ = false;
  bool commit_sent_ = false;
  bool broken_ = false;
  bool saw_error_record_ = false;
  bool write_failed_ = false;  // a write failed after its last attempt
  bool receiver_ended_ = false;
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
  std::vector<fabric::WorkCompletion> records_;
  std::vector<pollfd> wait_fds_;  // the fabric's wait objects, for the next ReadControl only
  std::vector<pollfd> poll_set_;  // the control connection, then wait_fds_
};

}  // namespace writ::sender
