// The volatile store: retained bytes live in the store's arena (volatile_arena.h): one
// memory file (memfd) mapped into the receiver once, or with a scratch directory one
// unlinked file, held by the receiver process (not the process's heap; bounded by the
// store's capacity whatever the delivery size). They vanish when the process ends. So do a
// retained delivery's receipt texts: they live in a slab slot of the same arena, counted in
// the capacity, not on the process's heap (which a store of small deliveries would otherwise
// grow by a few pages per delivery).
//
// A delivery is held in extents (64 MiB) of the arena, the last one (or a delivery under
// one) in a slab slot unless the extent beside its others is free. With a reserve, a
// background thread keeps that many whole extents ready with their memory already touched
// (refilled only while no volatile delivery is being received: touching fresh memory on this
// project's VMs slows every other thread's memory access down with it), so a delivery's
// writes land in memory the host has backed and mapped instead of paying for first touch
// (on this project's VMs, 0.2-0.4 GB/s: docs/benchmarks.md). Reserve memory is on top
// of the capacity. An adaptive reserve (the serve's default) starts empty and grows to the
// largest delivery announced, up to a bound; whole extents of abandoned and removed
// deliveries are recycled into it (cleared first: what a sender wrote for one delivery is
// never in another's memory) instead of going back to the host.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "store/env.h"
#include "store/store.h"
#include "store/volatile_arena.h"

namespace writ::store {

class VolatileStore : public Store {
 public:
  // `scratch_dir` holds the unlinked files (empty: memfd memory files); `capacity` bounds
  // the bytes held. File calls go
  // through `env` (nullptr: Env::Default()).
  static Result<std::unique_ptr<VolatileStore>> Open(std::string scratch_dir, uint64_t capacity,
                                                     Env* env = nullptr);
  struct Options {
    std::string scratch_dir;
    uint64_t capacity = 0;
    // Bytes of touched memory kept ready (memfd only; rounded up to whole extents).
    uint64_t reserve = 0;
    // When above `reserve`: the reserve grows to the largest delivery announced (whole
    // extents), up to this many bytes (rounded down to whole extents).
    uint64_t reserve_limit = 0;
    // A multiple of the page size.
    uint64_t extent_bytes = 64ull << 20;
    // Hears each time the reserve is full (again), and of each failure to fill it.
    std::function<void(const std::string&)> on_event;
    // A time-to-live: each delivery is promised for at least this long (lifecycle.h);
    // 0: held until removed.
    std::chrono::milliseconds ttl{0};
  };
  static Result<std::unique_ptr<VolatileStore>> Open(Options options, Env* env = nullptr);
  // Extents of the reserve ready now.
  size_t ready_extents();
  // Extents the reserve is filling towards now.
  size_t target_extents();
  ~VolatileStore() override;

  bool Offers(RetentionClass retention) const override {
    return retention == RetentionClass::kVolatile;
  }
  Result<std::optional<RetainedDelivery>> Lookup(const std::string& id) override;
  // Re-hashes the held bytes (in this process's memory) before answering; bytes that fail
  // are reported as a Validation error, the delivery left as it is.
  Result<std::optional<RetainedDelivery>> LookupVerified(const std::string& id) override;
  Result<std::unique_ptr<PayloadWriter>> Begin(DeliveryMeta meta,
                                               RetentionClass retention) override;
  Status AppendReceipt(const std::string& id, const std::string& receipt_json) override;
  Status AppendReceipts(const std::string& id, std::span<const std::string> receipts) override;
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override;
  // In the arena's memory, when the range lies in one piece or in pieces side by side; the
  // view keeps the delivery's memory (not its capacity) and the arena's mapping, even after
  // a removal or the store's end.
  Result<HeldView> View(const std::string& id, uint64_t offset, uint64_t length) override;
  // Drops the entry and gives its capacity back; its memory goes once no read holds it.
  Result<Removal> Remove(const std::string& id, bool force, uint64_t now_ms) override;
  Result<std::vector<std::string>> Expired(uint64_t now_ms) override;
  // The arena's extents not in use (for tests).
  size_t free_extents() const { return arena_->free_extents(); }
  // The capacity, and how much of it is taken now (for metrics).
  uint64_t capacity() const { return capacity_; }
  uint64_t used_bytes() const;
  // The entry goes at once; its memory once no Read holds it.
  Status DropSuperseded(const std::string& id) override;

 private:
  friend class VolatileWriter;
  // Where a part of a delivery lives in the arena: a whole extent (span == the extent size)
  // or a slab slot, holding `length` of its bytes.
  struct Piece {
    uint64_t at = 0;
    uint64_t length = 0;
    uint64_t span = 0;
  };
  // Where holdings give their pieces back: the store while it lives (a view may outlive it,
  // and then its pieces go with the arena).
  struct Owner {
    Mutex mu;
    VolatileStore* store GUARDED_BY(mu) = nullptr;
  };
  // A retained delivery's pieces, given back to the arena when the last holder lets go: a
  // Read in progress, or a view, keeps them while Remove drops the entry.
  struct Holding {
    std::shared_ptr<Owner> owner;
    std::vector<Piece> pieces;
    ~Holding();
  };
  // A retained delivery's receipt texts in one slab slot of the arena, one after another,
  // each after its length (u32). The slot is counted in the capacity.
  struct Texts {
    Piece slot;         // span 0: none yet
    uint64_t used = 0;  // bytes of the slot written
    uint32_t count = 0;
  };
  // A retained delivery holds no file descriptor and no mapping of its own; its
  // `delivery.receipts` stay empty (the texts are in `texts`).
  struct Entry {
    RetainedDelivery delivery;
    std::shared_ptr<const Holding> holding;
    Texts texts;
    uint64_t reserved = 0;  // of the capacity, given back when it is removed (texts apart)
  };
  // Capacity is taken an extent at a time, as a delivery's windows are granted (not for the
  // whole announced size at once); Refused (space) when `bytes` more do not fit.
  Status Take(uint64_t bytes, const std::string& id);
  Status TakeLocked(uint64_t bytes, const std::string& id) REQUIRES(mu_);
  // Appends `more` to `texts`, moving them to a larger slot when they do not fit (with room
  // for half as much again when `room_for_more`: at a commit, whose retained receipt
  // follows); Refused (space) when the capacity has no room for it.
  Status AppendTexts(Texts& texts, std::span<const std::string> more, const std::string& id,
                     bool room_for_more) REQUIRES(mu_);
  std::vector<std::string> ReadTexts(const Texts& texts) const REQUIRES(mu_);
  // Gives an entry's texts slot back to the arena and its span back to the capacity.
  void DropTexts(Texts& texts) REQUIRES(mu_);
  VolatileStore(std::string dir, uint64_t capacity) : dir_(std::move(dir)), capacity_(capacity) {}
  uint64_t extent_bytes_ = 64ull << 20;
  void Release(uint64_t bytes);
  // Splits [offset, offset + out.size()) of a delivery at piece boundaries and reads it.
  Status ReadPieces(const std::vector<Piece>& pieces, const std::string& id, uint64_t bytes,
                    uint64_t offset, std::span<uint8_t> out) const;
  // Inserts the entry with `receipts` as its texts.
  Status Insert(Entry entry, const std::vector<std::string>& receipts);
  // Whole extents go to the reserve (cleared there) while it has room, the rest back to the
  // arena with their memory.
  void GivePieces(const std::vector<Piece>& pieces);
  // A whole ready extent from the reserve, `prefer` if that one is ready; none when empty.
  std::optional<uint64_t> TakeReady(std::optional<uint64_t> prefer);
  void FillReserve();
  // A touched extent for the reserve: a cleared recycled one, else a new one.
  Result<uint64_t> NextReadyExtent(std::optional<uint64_t> recycled);
  void WriterDone();
  // Offers a whole extent of a delivery to the reserve; false when it has no room.
  bool Recycle(uint64_t at);
  size_t TargetExtents() const REQUIRES(mu_) {
    return std::max(reserve_extents_, std::min(reserve_limit_extents_, grown_extents_));
  }

  std::function<void(const std::string&)> on_event_;
  std::chrono::milliseconds ttl_{0};
  size_t reserve_extents_ = 0;
  size_t reserve_limit_extents_ = 0;
  size_t grown_extents_ GUARDED_BY(mu_) = 0;  // whole extents of the largest delivery announced
  std::set<uint64_t> ready_ GUARDED_BY(mu_);  // touched, cleared whole extents
  std::vector<uint64_t> recycled_ GUARDED_BY(mu_);  // given-back extents, to be cleared
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t writers_ GUARDED_BY(mu_) = 0;  // deliveries being received: the reserve waits for 0
  std::condition_variable reserve_cv_;
  std::thread filler_;

  std::string dir_;
  uint64_t capacity_;
  std::shared_ptr<VolatileArena> arena_;  // views share it
  std::shared_ptr<Owner> owner_ = std::make_shared<Owner>();
  mutable Mutex mu_;
  uint64_t reserved_ GUARDED_BY(mu_) = 0;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace writ::store
