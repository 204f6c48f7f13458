// One delivery on its way in: the windows granted for it, which chunks were
// notified, and the digest and store fed strictly in chunk order as the
// contiguous prefix of notified chunks grows (no second pass over the bytes).
//
// What is digested must be what is retained. A copied chunk is digested as it is copied,
// so later writes into its window reach neither. A placed window holds the retained
// bytes themselves, so it is revoked first and digested after: no write can change a
// byte once it has been validated.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "fabric/memory_region.h"
#include "protocol/digest.h"
#include "protocol/messages.h"
#include "receiver/window_pool.h"
#include "store/store.h"

namespace writ::receiver {

struct LiveWindow {
  uint16_t tag = 0;
  uint32_t pool_index = 0;
  uint8_t* data = nullptr;
  uint64_t first_chunk = 0;
  uint32_t chunk_count = 0;
  uint64_t length = 0;
  fabric::MemoryRegion region;  // revoked (closed) when the window is consumed
  // The window is the store's own memory (the retained bytes themselves), not a pool
  // window the bytes are copied out of.
  bool placed = false;
  std::vector<bool> notified;
  uint32_t notified_count = 0;
};

class InboundDelivery {
 public:
  InboundDelivery(protocol::Announce announce, std::unique_ptr<protocol::Digester> digester,
                  std::unique_ptr<store::PayloadWriter> writer);

  const protocol::Announce& announce() const { return announce_; }
  uint64_t chunk_count() const { return chunks_; }

  // Layout of the next window for a window of `window_bytes`: chunks and bytes, or
  // zero chunks when every chunk has a window already.
  bool NeedsWindow(uint32_t max_windows) const;
  void AddWindow(LiveWindow window);
  uint32_t ChunksForWindow(uint64_t window_bytes) const;
  uint64_t BytesForChunks(uint64_t first_chunk, uint32_t count) const;
  uint64_t next_grant_chunk() const { return next_grant_chunk_; }

  // A notification value for one of this delivery's windows. Duplicates are
  // ignored; a chunk index outside its window is an error naming it.
  Status OnNotification(uint16_t tag, uint16_t chunk_in_window);

  // Feeds every newly contiguous notified chunk to the digest and the store, and
  // hands back the windows that are now fully consumed (the caller revokes them). A
  // placed window is consumed whole, once all its chunks are notified, and only after
  // its registration is closed.
  Result<std::vector<LiveWindow>> Consume();

  bool all_received() const { return received_ == chunks_; }
  bool all_consumed() const { return next_consume_chunk_ == chunks_; }
  uint64_t received_chunks() const { return received_; }

  // The digest of all consumed bytes (call once, after all_consumed()).
  std::vector<uint8_t> FinishDigest() { return digester_->Finish(); }
  store::PayloadWriter& writer() { return *writer_; }
  // Gives up every live window (for revocation), e.g. when the delivery is abandoned.
  std::vector<LiveWindow> TakeWindows();

  bool commit_seen = false;
  bool received_receipt_sent = false;

 private:
  Status ConsumePlacedWindow(LiveWindow& w);

  protocol::Announce announce_;
  uint64_t chunks_;
  std::unique_ptr<protocol::Digester> digester_;
  std::unique_ptr<store::PayloadWriter> writer_;
  std::deque<LiveWindow> windows_;  // ordered by first_chunk
  uint64_t next_grant_chunk_ = 0;
  uint64_t next_consume_chunk_ = 0;
  uint64_t received_ = 0;
};

}  // namespace writ::receiver
