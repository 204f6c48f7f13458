// One delivery on its way in: the windows granted for it, which chunks were
// notified, and the store and the digest workers (digest_pool.h) fed in chunk order, a
// window at a time, as windows fill (no second pass over the bytes).
//
// What is digested must be what is retained. A window is therefore revoked before any of
// its bytes are read: while it is registered the sender could still change a chunk
// between the digest's read and the store's copy (or, for a placed window, after the
// digest, in the retained memory itself). A consumed window is held until the workers
// have digested it (or the digest is cancelled), and only then goes back to the pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fabric/memory_region.h"
#include "protocol/messages.h"
#include "receiver/digest_pool.h"
#include "receiver/leases.h"
#include "receiver/reservation.h"
#include "receiver/window_pool.h"
#include "store/store.h"

namespace writ::receiver {

// How the receiver learned that a chunk landed: its write's notification (remote CQ data),
// or its sender's `written` (where notifications name no writer,
// ProviderInfo::writes_need_attestation). A chunk counts once every signal it needs came.
enum class Landing : uint8_t { kNotified = 1, kAttested = 2 };
inline constexpr uint8_t kNotifiedOnly = 1;
inline constexpr uint8_t kNotifiedAndAttested = 3;

// A window granted to a delivery. Its leases go back when it ends, in the reverse of their
// order here: the registration is revoked first (no write may land after), then its place in
// its sender's limit is given back, its tag unbound, and last the pool's window freed.
struct LiveWindow {
  PoolLease pool;                   // empty for a window that is not the pool's
  TagLease route;                   // `tag`, routed to the delivery's run
  std::optional<Reservation> slot;  // the window in its sender's limit
  fabric::MemoryRegion region;      // revoked (closed) when the window is consumed
  uint16_t tag = 0;
  uint8_t* data = nullptr;
  uint64_t first_chunk = 0;
  uint32_t chunk_count = 0;
  uint64_t length = 0;
  std::vector<uint8_t> landing;  // per chunk, the Landing bits seen
  uint32_t landed_count = 0;     // chunks with every signal they need
};

class InboundDelivery {
 public:
  InboundDelivery(protocol::Announce announce, std::shared_ptr<DigestStream> digest,
                  std::unique_ptr<store::PayloadWriter> writer);
  // Cancels the digest first: no worker reads a window once its leases are given back (its
  // windows are revoked, then freed, and the uncommitted writer discards its bytes).
  ~InboundDelivery();
  InboundDelivery(const InboundDelivery&) = delete;
  InboundDelivery& operator=(const InboundDelivery&) = delete;

  // The announce, its digest filled in from the commit when it carried none.
  const protocol::Announce& announce() const { return announce_; }
  // Whether the digest the bytes must match is known (announced, or committed).
  bool digest_known() const { return !announce_.digest.empty(); }
  void AdoptCommittedDigest(std::vector<uint8_t> digest) {
    announce_.digest = std::move(digest);
    digest_from_commit_ = true;
  }
  bool digest_from_commit() const { return digest_from_commit_; }  // none was announced
  uint64_t chunk_count() const { return chunks_; }

  // Layout of the next window for a window of `window_bytes`: chunks and bytes, or
  // zero chunks when every chunk has a window already.
  bool NeedsWindow(uint32_t max_windows) const;
  void AddWindow(LiveWindow window);
  uint32_t ChunksForWindow(uint64_t window_bytes) const;
  // The chunks of the next window to grant: as many as fit, but at most half of the chunks
  // not yet granted (at least one), so the last windows shrink (…, 4, 2, 1, 1 chunks) and
  // the delivery's verdict follows its last chunk by one chunk's digest, not a window's.
  uint32_t ChunksToGrant(uint64_t window_bytes) const;
  uint64_t BytesForChunks(uint64_t first_chunk, uint32_t count) const;
  uint64_t next_grant_chunk() const { return next_grant_chunk_; }
  size_t window_count() const { return windows_.size(); }  // granted, not yet consumed

  // A landing signal for chunk `chunk_in_window` of window `tag`; the chunk counts once it
  // has every signal in `needed` (kNotifiedOnly, or kNotifiedAndAttested). Duplicates are
  // ignored; a chunk index outside its window is Malformed, a window this delivery does not
  // hold NotFound, each naming it.
  Status OnLanding(uint16_t tag, uint16_t chunk_in_window, Landing how, uint8_t needed);

  // A delivery written into a ring slot (standing_ring.h): it takes no window; its bytes
  // come whole, copied out of the slot, through ConsumeCopy.
  void ExpectCopy() { next_grant_chunk_ = chunks_; }
  // Every chunk at once: `bytes` (the slot's copy, owned here until digested) go to the
  // store and to the digest workers.
  Status ConsumeCopy(std::vector<uint8_t> bytes);

  // Consumes, in order, every leading window whose chunks have all been notified: closes
  // its registration, then hands its bytes to the store and to the digest workers. The
  // window is held until TakeDigested hands it back.
  Status Consume();
  // The consumed windows the workers have digested; their leases go back as they end.
  std::vector<LiveWindow> TakeDigested();

  bool all_received() const { return received_ == chunks_; }
  bool all_consumed() const { return next_consume_chunk_ == chunks_; }
  // Every consumed byte has been digested.
  bool all_digested() const { return digest_->idle(); }
  uint64_t received_chunks() const { return received_; }

  // The digest of all consumed bytes (call once, after all_consumed() and all_digested()).
  std::vector<uint8_t> FinishDigest() { return digest_->Finish(); }
  // What the digest must equal (the one place it is read from).
  const std::vector<uint8_t>& expected_digest() const { return announce_.digest; }
  store::PayloadWriter& writer() { return *writer_; }

 private:
  Status ConsumeWindow(LiveWindow& w);

  protocol::Announce announce_;
  uint64_t chunks_;
  std::shared_ptr<DigestStream> digest_;
  std::unique_ptr<store::PayloadWriter> writer_;
  // A few each (windows_per_delivery); vectors, not deques, because a ring delivery has
  // none and libstdc++'s deque allocates two blocks as it is constructed.
  std::vector<LiveWindow> windows_;    // ordered by first_chunk
  std::vector<LiveWindow> digesting_;  // consumed, read by the digest workers until done
  std::vector<uint8_t> copy_;          // ConsumeCopy's bytes, read by the digest workers
  bool digest_from_commit_ = false;
  uint64_t next_grant_chunk_ = 0;
  uint64_t next_consume_chunk_ = 0;
  uint64_t received_ = 0;
};

}  // namespace writ::receiver
