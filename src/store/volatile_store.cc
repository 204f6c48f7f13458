#include "store/volatile_store.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/thread.h"

namespace writ::store {

class VolatileWriter : public PayloadWriter {
 public:
  VolatileWriter(VolatileStore& store, DeliveryMeta meta)
      : store_(store), arena_(*store.arena_), meta_(std::move(meta)) {}
  ~VolatileWriter() override {
    if (!committed_) {
      // Its memory holds what a sender wrote (and a sender may notify chunks without writing
      // them). Its windows were revoked before this writer is dropped (InboundDelivery's
      // members), so nothing writes here any more: whole extents go to the reserve, which
      // clears them before any delivery can have them; the rest is cleared or given back.
      store_.GivePieces(pieces_);
      store_.Release(taken_);
    }
    store_.WriterDone();
  }

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    if (offset > meta_.bytes || bytes.size() > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: write past the delivery's end");
    }
    if (!bytes.empty() && bytes.data() == AddressOf(offset)) {
      placed_ += bytes.size();  // the transport put them here already
      return Status::Ok();
    }
    WRIT_RETURN_IF_ERROR(AllocateThrough(offset + bytes.size()));
    copied_ += bytes.size();
    while (!bytes.empty()) {
      const size_t i = static_cast<size_t>(offset / store_.extent_bytes_);
      const uint64_t within = offset - i * store_.extent_bytes_;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(bytes.size(), pieces_[i].length - within));
      Status s = arena_.Write(pieces_[i].at + within, bytes.first(n));
      if (!s.ok()) return s.Annotate("volatile store: write");
      bytes = bytes.subspan(n);
      offset += n;
    }
    return Status::Ok();
  }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    if (offset + out.size() > Covered()) {
      return Status::InvalidArgument("volatile store: read of bytes of " + meta_.id +
                                     " not yet written");
    }
    return store_.ReadPieces(pieces_, meta_.id, meta_.bytes, offset, out);
  }

  // The bytes' memory is the arena's, mapped once: a placement only allocates its range
  // (so a store out of memory refuses the window instead of a page fault failing later)
  // and says where it is. A range across two pieces that are not side by side, a small
  // delivery, or a scratch file is copied instead (nullptr).
  Result<uint8_t*> Placement(uint64_t offset, uint64_t length) override {
    if (offset > meta_.bytes || length > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: placement past the delivery's end");
    }
    // The capacity for the window is taken now, placed or copied.
    WRIT_RETURN_IF_ERROR(AllocateThrough(offset + length));
    if (!arena_.in_memory() || meta_.bytes < kPlacementMinBytes || length == 0) return nullptr;
    const uint64_t e = store_.extent_bytes_;
    const size_t first = static_cast<size_t>(offset / e);
    for (size_t i = first + 1; i * e < offset + length; ++i) {
      if (pieces_[i].at != pieces_[first].at + (i - first) * e) return nullptr;
    }
    return AddressOf(offset);
  }

  void SetDigest(std::vector<uint8_t> digest) override { meta_.digest = std::move(digest); }
  Result<RetentionEvidence> Commit(const std::vector<std::string>& receipts) override {
    WRIT_RETURN_IF_ERROR(AllocateThrough(meta_.bytes));
    VolatileStore::Entry entry;
    // Moved: nothing reads this writer after its commit but the sizes, which a move keeps.
    entry.delivery.meta = std::move(meta_);
    entry.delivery.retention = RetentionClass::kVolatile;
    const uint64_t held_until =
        store_.ttl_.count() > 0 ? NowUnixMs() + static_cast<uint64_t>(store_.ttl_.count()) : 0;
    entry.delivery.held_until_ms = held_until;
    entry.reserved = taken_;
    const size_t pieces = pieces_.size();
    auto holding = std::make_shared<VolatileStore::Holding>();
    holding->owner = store_.owner_;
    holding->pieces = std::move(pieces_);  // the entry holds them now, or gives them back
    pieces_.clear();
    entry.holding = std::move(holding);
    WRIT_RETURN_IF_ERROR(store_.Insert(std::move(entry), receipts));
    committed_ = true;  // the store owns the pieces and the capacity now
    RetentionEvidence ev;
    ev.retention = RetentionClass::kVolatile;
    ev.held_until_ms = held_until;
    ev.ttl = store_.ttl_;
    ev.acknowledged_point = AcknowledgedPoint();
    static const std::string kPromise =
        "none: the delivery is held only while this receiver process runs; after a crash or "
        "restart it is gone";
    ev.promise_after_failure = kPromise;
    ev.evidence = Evidence(pieces);
    return ev;
  }

 private:
  const std::string& AcknowledgedPoint() const {
    static const std::string kPlaced =
        "bytes placed by the transport directly into the receiver's volatile memory "
        "(anonymous memory, mapped once and held by the receiver process); index entry in "
        "the process's memory";
    static const std::string kCopied =
        "bytes copied into the receiver's volatile memory (anonymous memory, mapped once and "
        "held by the receiver process); index entry in the process's memory";
    static const std::string kPlacedInFile =
        "bytes placed by the transport directly into the receiver's volatile memory (an "
        "anonymous memory file, memfd, mapped once and held by the receiver process); index "
        "entry in the process's memory";
    static const std::string kCopiedInFile =
        "bytes copied into the receiver's volatile memory (an anonymous memory file, memfd, "
        "mapped once and held by the receiver process); index entry in the process's memory";
    static const std::string kFile =
        "bytes written (pwrite, no sync) to an unlinked temporary file held open by the "
        "receiver process; index entry in the process's memory";
    if (!store_.dir_.empty()) return kFile;
    if (arena_.anonymous()) return placed_ > 0 ? kPlaced : kCopied;
    return placed_ > 0 ? kPlacedInFile : kCopiedInFile;
  }
  // Built in one string (one allocation): this runs once per delivery.
  std::string Evidence(size_t pieces) const {
    std::string out;
    out.reserve(256 + store_.dir_.size());
    const auto number = [&out](uint64_t n) { out += std::to_string(n); };  // short: no allocation
    if (!store_.dir_.empty()) {
      out += "pwrite of ";
      number(meta_.bytes);
      out += " bytes into ";
      number(pieces);
      out += " piece(s) of an unlinked file in ";
      out += store_.dir_;
      out += " returned success; no fsync was done";
      return out;
    }
    if (placed_ > 0) {
      number(placed_);
      out += arena_.anonymous()
                 ? " bytes placed by RDMA writes into a registered range of the store's memory, "
                 : " bytes placed by RDMA writes into a registered range of the memory file's "
                   "mapping, ";
      number(meta_.bytes - placed_);
      out += " bytes copied, into ";
    } else {
      out += "memcpy of ";
      number(meta_.bytes);
      out += " bytes into ";
    }
    number(pieces);
    out += arena_.anonymous() ? " piece(s) of the store's anonymous memory (host memory"
                              : " piece(s) of the memory file (host memory";
    if (warm_ > 0) {
      out += ", ";
      number(warm_);
      out += " from the touched reserve";
    }
    out += ") completed; no fsync was done";
    return out;
  }
  uint64_t ExtentLength(size_t i) const {
    return std::min(store_.extent_bytes_, meta_.bytes - i * store_.extent_bytes_);
  }
  uint64_t Covered() const {
    return pieces_.empty() ? 0
                           : (pieces_.size() - 1) * store_.extent_bytes_ + pieces_.back().length;
  }
  // Where byte `offset` lives in the arena's mapping; nullptr when it is not allocated yet
  // (or the arena is a scratch file).
  uint8_t* AddressOf(uint64_t offset) const {
    if (!arena_.in_memory() || offset >= Covered()) return nullptr;
    const size_t i = static_cast<size_t>(offset / store_.extent_bytes_);
    return arena_.At(pieces_[i].at + offset - i * store_.extent_bytes_);
  }

  // Memory for the delivery exists before the writes, an extent at a time: a receiver
  // that cannot hold the bytes fails here, naming the delivery, rather than mid-write.
  Status AllocateThrough(uint64_t end) {
    while (Covered() < end) {
      const uint64_t length = ExtentLength(pieces_.size());
      WRIT_RETURN_IF_ERROR(store_.Take(length, meta_.id));
      auto piece = NextPiece(length);
      if (!piece.ok()) {
        store_.Release(length);
        return piece.status().Annotate("volatile store: allocating memory for " + meta_.id);
      }
      taken_ += length;
      pieces_.push_back(*piece);
    }
    return Status::Ok();
  }

  // A whole extent (from the reserve first), beside the delivery's last one where it can
  // be; a short piece in a slab slot unless the extent beside the last one is free.
  Result<VolatileStore::Piece> NextPiece(uint64_t length) {
    const uint64_t e = store_.extent_bytes_;
    std::optional<uint64_t> beside;
    if (!pieces_.empty() && pieces_.back().span == e) beside = pieces_.back().at + e;
    if (length == e) {
      if (auto ready = store_.TakeReady(beside)) {
        ++warm_;
        return VolatileStore::Piece{*ready, length, e};
      }
    }
    const bool slot = arena_.SlotSize(length) < e;
    std::optional<uint64_t> at;
    if (!slot || beside) at = arena_.TakeExtent(beside, /*only_preferred=*/slot);
    if (!at) {
      if (slot) {
        WRIT_ASSIGN_OR_RETURN(uint64_t in_slab, arena_.TakeSlot(length));
        return VolatileStore::Piece{in_slab, length, arena_.SlotSize(length)};
      }
      return Status::Refused("space: the volatile store's memory has no free extent");
    }
    Status provisioned = arena_.Provision(*at, length);
    if (!provisioned.ok()) {
      arena_.GiveExtent(*at);
      return provisioned;
    }
    return VolatileStore::Piece{*at, length, e};
  }

  static constexpr uint64_t kPlacementMinBytes = 1ull << 20;
  VolatileStore& store_;
  VolatileArena& arena_;
  DeliveryMeta meta_;
  std::vector<VolatileStore::Piece> pieces_;  // piece i holds bytes [i * extent, ...)
  bool committed_ = false;
  uint64_t placed_ = 0;  // bytes the transport placed directly
  uint64_t copied_ = 0;  // bytes copied in
  uint64_t warm_ = 0;    // extents taken from the reserve
  uint64_t taken_ = 0;   // of the store's capacity, for the pieces allocated so far
};

Result<std::unique_ptr<VolatileStore>> VolatileStore::Open(std::string scratch_dir,
                                                           uint64_t capacity, Env* env) {
  Options options;
  options.scratch_dir = std::move(scratch_dir);
  options.capacity = capacity;
  return Open(std::move(options), env);
}

Result<std::unique_ptr<VolatileStore>> VolatileStore::Open(Options options, Env* env) {
  if (env == nullptr) env = Env::Default();
  const std::string& scratch_dir = options.scratch_dir;
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (options.extent_bytes == 0 || options.extent_bytes % page != 0) {
    return Status::InvalidArgument("volatile store: an extent must be whole pages");
  }
  if (!scratch_dir.empty()) {
    if (options.reserve > 0) {
      return Status::InvalidArgument(
          "volatile store: a memory reserve is for deliveries held in memory, not in a scratch "
          "directory");
    }
    auto info = env->Stat(scratch_dir);
    if (!info.ok() || !info->is_dir) {
      return Status::Io("volatile store: " + scratch_dir + " is not a directory",
                        info.ok() ? ENOTDIR : info.status().sys_errno());
    }
  }
  std::unique_ptr<VolatileStore> store(
      new VolatileStore(std::move(options.scratch_dir), options.capacity));
  {
    MutexLock lock(store->owner_->mu);
    store->owner_->store = store.get();
  }
  store->extent_bytes_ = options.extent_bytes;
  store->on_event_ = std::move(options.on_event);
  store->ttl_ = options.ttl;
  store->reserve_extents_ =
      static_cast<size_t>((options.reserve + options.extent_bytes - 1) / options.extent_bytes);
  store->reserve_limit_extents_ = static_cast<size_t>(options.reserve_limit / options.extent_bytes);
  // Room for the capacity twice over (short pieces and slabs take whole extents of address
  // space, not of memory), the reserve, and a partly used slab of each slot size.
  const uint64_t capacity_extents =
      (options.capacity + options.extent_bytes - 1) / options.extent_bytes;
  const size_t extents = static_cast<size_t>(std::min<uint64_t>(
      2 * capacity_extents + store->reserve_extents_ + store->reserve_limit_extents_ + 2 * 64 + 8,
      uint64_t{1} << 40));
  WRIT_ASSIGN_OR_RETURN(store->arena_,
                        VolatileArena::Open(env, store->dir_, options.extent_bytes, extents));
  if (store->reserve_extents_ > 0 || store->reserve_limit_extents_ > 0)
    WRIT_RETURN_IF_ERROR(StartThread(store->filler_, "the volatile reserve's thread",
                                     [s = store.get()] { s->FillReserve(); }));
  return store;
}

VolatileStore::~VolatileStore() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  reserve_cv_.notify_all();
  if (filler_.joinable()) filler_.join();
  {
    MutexLock lock(owner_->mu);  // a view let go from now on gives nothing back
    owner_->store = nullptr;
  }
  entries_.clear();  // gives back what no read holds (none: the store is going)
  arena_.reset();    // one unmap and one close for everything
}

size_t VolatileStore::ready_extents() {
  MutexLock lock(mu_);
  return ready_.size();
}

size_t VolatileStore::target_extents() {
  MutexLock lock(mu_);
  return TargetExtents();
}

bool VolatileStore::Recycle(uint64_t at) {
  if (!dir_.empty()) return false;  // a scratch file's blocks: not memory to keep
  {
    MutexLock lock(mu_);
    if (stopping_ || ready_.size() + recycled_.size() >= TargetExtents()) return false;
    recycled_.push_back(at);
  }
  reserve_cv_.notify_all();  // the filler clears it once no delivery is being received
  return true;
}

void VolatileStore::GivePieces(const std::vector<Piece>& pieces) {
  {
    MutexLock lock(mu_);
    if (stopping_) return;  // the arena goes whole
  }
  for (const Piece& piece : pieces) {
    if (piece.span == extent_bytes_) {
      if (piece.length == extent_bytes_ && Recycle(piece.at)) continue;
      arena_->GiveExtent(piece.at);
    } else {
      arena_->GiveSlot(piece.at, piece.length);
    }
  }
}

std::optional<uint64_t> VolatileStore::TakeReady(std::optional<uint64_t> prefer) {
  MutexLock lock(mu_);
  if (ready_.empty()) return std::nullopt;
  auto it = prefer ? ready_.find(*prefer) : ready_.end();
  if (it == ready_.end()) it = ready_.begin();
  const uint64_t at = *it;
  ready_.erase(it);
  reserve_cv_.notify_all();
  return at;
}

// Runs at idle priority: it touches memory only when no transfer wants the CPU.
void VolatileStore::FillReserve() {
  sched_param idle{};
  (void)sched_setscheduler(0, SCHED_IDLE, &idle);  // this thread only (Linux)
  // Named, so that a benchmark can leave its CPU out of a delivery's (bench/compare).
  (void)pthread_setname_np(pthread_self(), "writ-reserve");
  // Each time it is full again, it says so: a benchmark waits for that line.
  auto started = std::chrono::steady_clock::now();
  bool full = false;
  for (;;) {
    std::optional<uint64_t> recycled;
    {
      MutexLock lock(mu_);
      const size_t target = TargetExtents();
      if (!full && target > 0 && ready_.size() >= target) {
        full = true;
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (on_event_) {
          char line[160];
          std::snprintf(line, sizeof line,
                        "volatile reserve ready: %zu MiB of memory touched in %.1f s",
                        static_cast<size_t>(target * extent_bytes_ >> 20), seconds);
          on_event_(line);
        }
      }
      lock.Wait(reserve_cv_, [&]() REQUIRES(mu_) {
        return stopping_ ||
               (writers_ == 0 && (!recycled_.empty() || ready_.size() < TargetExtents()));
      });
      if (stopping_) return;
      if (full) {
        full = false;
        started = std::chrono::steady_clock::now();
      }
      if (!recycled_.empty()) {
        recycled = recycled_.back();
        recycled_.pop_back();
      }
    }
    Result<uint64_t> ready = NextReadyExtent(recycled);
    if (!ready.ok()) {
      if (on_event_) on_event_("volatile reserve: cannot fill it: " + ready.status().ToString());
      MutexLock lock(mu_);
      lock.WaitFor(reserve_cv_, std::chrono::seconds(10),
                   [&]() REQUIRES(mu_) { return stopping_; });
      if (stopping_) return;
      continue;
    }
    MutexLock lock(mu_);
    ready_.insert(*ready);
  }
}

Result<uint64_t> VolatileStore::NextReadyExtent(std::optional<uint64_t> recycled) {
  // A recycled extent is cleared over all of it, through the arena's one mapping: what one
  // delivery's sender wrote is never in another's memory (docs/security.md), and its pages
  // stay mapped. A new one is provisioned once (fallocate, MADV_POPULATE_WRITE), so that its
  // pages exist, the host has backed them and they are mapped.
  if (recycled) {
    WRIT_RETURN_IF_ERROR(arena_->Clear(*recycled, extent_bytes_));
    return *recycled;
  }
  std::optional<uint64_t> at = arena_->TakeExtent(std::nullopt);
  if (!at) return Status::Refused("space: the volatile store's memory has no free extent");
  Status s = arena_->Provision(*at, extent_bytes_);
  if (!s.ok()) {
    arena_->GiveExtent(*at);
    return s;
  }
  return *at;
}

void VolatileStore::WriterDone() {
  {
    MutexLock lock(mu_);
    --writers_;
  }
  reserve_cv_.notify_all();
}

Status VolatileStore::Take(uint64_t bytes, const std::string& id) {
  MutexLock lock(mu_);
  return TakeLocked(bytes, id);
}

Status VolatileStore::TakeLocked(uint64_t bytes, const std::string& id) {
  if (bytes > capacity_ - reserved_) {
    return Status::Refused("space: delivery " + id + " needs " + std::to_string(bytes) +
                           " more bytes but the volatile store's capacity of " +
                           std::to_string(capacity_) + " bytes has " +
                           std::to_string(capacity_ - reserved_) + " free");
  }
  reserved_ += bytes;
  return Status::Ok();
}

void VolatileStore::Release(uint64_t bytes) {
  MutexLock lock(mu_);
  reserved_ -= bytes;
}

Status VolatileStore::Insert(Entry entry, const std::vector<std::string>& receipts) {
  std::shared_ptr<const Holding> refused;  // given back after the lock is let go
  MutexLock lock(mu_);
  const std::string& id = entry.delivery.meta.id;
  if (entries_.contains(id)) {
    refused = std::move(entry.holding);
    return Status::Refused("conflicting id: " + id + " is already retained");
  }
  if (Status placed = AppendTexts(entry.texts, receipts, id, /*room_for_more=*/true);
      !placed.ok()) {
    refused = std::move(entry.holding);
    return placed;
  }
  std::string key = id;
  entries_.emplace(std::move(key), std::move(entry));
  return Status::Ok();
}

Status VolatileStore::AppendTexts(Texts& texts, std::span<const std::string> more,
                                  const std::string& id, bool room_for_more) {
  if (more.empty()) return Status::Ok();
  uint64_t need = texts.used;
  for (const auto& text : more) need += sizeof(uint32_t) + text.size();
  if (need > texts.slot.span) {
    const uint64_t span = arena_->SlotSize(room_for_more ? need + need / 2 : need);
    if (span >= extent_bytes_) {
      return Status::Refused("space: " + std::to_string(need) +
                             " bytes of receipts do not fit in a slot of the volatile store");
    }
    if (span > capacity_ - reserved_) {
      return Status::Refused("space: the receipts of delivery " + id + " need " +
                             std::to_string(span) + " bytes of the volatile store's capacity of " +
                             std::to_string(capacity_) + " bytes (which holds receipts too), " +
                             std::to_string(capacity_ - reserved_) + " free");
    }
    reserved_ += span;
    auto at = arena_->TakeSlot(span);
    if (!at.ok()) {
      reserved_ -= span;
      return at.status();
    }
    if (texts.used > 0) {
      std::string held(texts.used, '\0');
      auto bytes = std::span(reinterpret_cast<uint8_t*>(held.data()), held.size());
      Status moved = arena_->Read(texts.slot.at, bytes);
      if (moved.ok()) moved = arena_->Write(*at, bytes);
      if (!moved.ok()) {
        arena_->GiveSlot(*at, texts.used);
        reserved_ -= span;
        return moved;
      }
    }
    const Texts moved_from = texts;
    DropTexts(texts);
    texts = Texts{Piece{*at, need, span}, moved_from.used, moved_from.count};
  }
  // In memory straight into the slot; in a scratch file one write for all of them.
  std::string staged;
  uint8_t* out = arena_->in_memory() ? arena_->At(texts.slot.at + texts.used) : nullptr;
  if (out == nullptr) staged.resize(need - texts.used);
  uint8_t* at = out != nullptr ? out : reinterpret_cast<uint8_t*>(staged.data());
  for (const auto& text : more) {
    const auto length = static_cast<uint32_t>(text.size());
    std::memcpy(at, &length, sizeof(length));
    std::memcpy(at + sizeof(length), text.data(), text.size());
    at += sizeof(length) + text.size();
  }
  if (out == nullptr) {
    WRIT_RETURN_IF_ERROR(
        arena_->Write(texts.slot.at + texts.used,
                      std::span(reinterpret_cast<const uint8_t*>(staged.data()), staged.size())));
  }
  texts.used = need;
  texts.count += static_cast<uint32_t>(more.size());
  return Status::Ok();
}

std::vector<std::string> VolatileStore::ReadTexts(const Texts& texts) const {
  std::vector<std::string> out;
  out.reserve(texts.count);
  uint64_t at = texts.slot.at;
  for (uint32_t i = 0; i < texts.count; ++i) {
    uint32_t length = 0;
    (void)arena_->Read(at, std::span(reinterpret_cast<uint8_t*>(&length), sizeof(length)));
    std::string text(length, '\0');
    (void)arena_->Read(at + sizeof(length),
                       std::span(reinterpret_cast<uint8_t*>(text.data()), text.size()));
    out.push_back(std::move(text));
    at += sizeof(length) + length;
  }
  return out;
}

void VolatileStore::DropTexts(Texts& texts) {
  if (texts.slot.span == 0) return;
  arena_->GiveSlot(texts.slot.at, texts.used);
  reserved_ -= std::min(reserved_, texts.slot.span);
  texts = Texts{};
}

Result<std::optional<RetainedDelivery>> VolatileStore::Lookup(const std::string& id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::optional<RetainedDelivery>();
  std::optional<RetainedDelivery> held(it->second.delivery);
  held->receipts = ReadTexts(it->second.texts);
  return held;
}

Result<std::optional<RetainedDelivery>> VolatileStore::LookupVerified(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto held, Lookup(id));
  if (!held) return held;
  WRIT_RETURN_IF_ERROR(VerifyHeldBytes(*this, held->meta));
  return held;
}

Result<std::unique_ptr<PayloadWriter>> VolatileStore::Begin(DeliveryMeta meta,
                                                            RetentionClass retention) {
  if (!Offers(retention)) {
    return Status::Retention("this receiver offers only volatile retention (start it with --data)");
  }
  {
    MutexLock lock(mu_);
    // Only a delivery that could never fit is refused here: capacity is taken as its
    // windows are granted, so an announce that is never written holds none.
    if (meta.bytes > capacity_) {
      return Status::Refused("space: delivery of " + std::to_string(meta.bytes) +
                             " bytes exceeds the volatile store's capacity of " +
                             std::to_string(capacity_) + " bytes");
    }
    ++writers_;
    // An adaptive reserve grows to what is asked of it (whole extents: the reserve serves
    // only those), up to its limit.
    grown_extents_ = std::max(grown_extents_, static_cast<size_t>(meta.bytes / extent_bytes_));
  }
  return std::unique_ptr<PayloadWriter>(new VolatileWriter(*this, std::move(meta)));
}

Status VolatileStore::AppendReceipt(const std::string& id, const std::string& receipt_json) {
  return AppendReceipts(id, std::span(&receipt_json, 1));
}

// A receipt that cannot be recorded undoes the commit (Store::AppendReceipt): the delivery
// is not held without the receipts that say it is, and its capacity goes back.
Status VolatileStore::AppendReceipts(const std::string& id, std::span<const std::string> receipts) {
  std::shared_ptr<const Holding> dropped;  // given back after the lock is let go
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
  Status appended = AppendTexts(it->second.texts, receipts, id, /*room_for_more=*/false);
  if (appended.ok()) return appended;
  reserved_ -= std::min(reserved_, it->second.reserved);
  DropTexts(it->second.texts);
  dropped = std::move(it->second.holding);
  entries_.erase(it);
  return appended.Annotate("volatile store: delivery " + id + " is not held");
}

uint64_t VolatileStore::used_bytes() const {
  MutexLock lock(mu_);
  return reserved_;
}

Status VolatileStore::Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) {
  std::shared_ptr<const Holding> holding;
  uint64_t bytes = 0;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
    holding = it->second.holding;  // kept while this read runs, even if removed
    bytes = it->second.delivery.meta.bytes;
  }
  return ReadPieces(holding->pieces, id, bytes, offset, out);
}

VolatileStore::Holding::~Holding() {
  MutexLock lock(owner->mu);
  if (owner->store != nullptr) owner->store->GivePieces(pieces);
}

Result<HeldView> VolatileStore::View(const std::string& id, uint64_t offset, uint64_t length) {
  std::shared_ptr<const Holding> holding;
  uint64_t bytes = 0;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
    holding = it->second.holding;
    bytes = it->second.delivery.meta.bytes;
  }
  if (offset > bytes || length > bytes - offset) {
    return Status::InvalidArgument("view past the end of delivery " + id + " (" +
                                   std::to_string(bytes) + " bytes)");
  }
  if (!arena_->in_memory()) {
    return Status::Unsupported(id + " is held in an unlinked file of " + dir_ +
                               ", not in memory: Read copies it");
  }
  const std::vector<Piece>& pieces = holding->pieces;
  const size_t first = static_cast<size_t>(offset / extent_bytes_);
  const uint64_t at =
      first < pieces.size() ? pieces[first].at + (offset - first * extent_bytes_) : 0;
  // Delivery offsets [i * extent, ...) lie in piece i; the range is one span of memory when
  // each piece it crosses into starts where the one before it ends.
  for (size_t i = first; length > 0 && (i + 1) * extent_bytes_ < offset + length; ++i) {
    if (pieces[i].at + pieces[i].length != pieces[i + 1].at) {
      return Status::Unsupported("bytes " + std::to_string(offset) + "-" +
                                 std::to_string(offset + length) + " of " + id +
                                 " lie in pieces of memory that are not side by side: Read "
                                 "copies them");
    }
  }
  struct Keep {
    std::shared_ptr<const Holding> holding;
    std::shared_ptr<VolatileArena> arena;
  };
  auto keep = std::make_shared<Keep>(Keep{std::move(holding), arena_});
  const uint8_t* start = length > 0 ? arena_->At(at) : nullptr;
  return HeldView{std::span<const uint8_t>(start, length), std::move(keep)};
}

Status VolatileStore::DropSuperseded(const std::string& id) {
  std::shared_ptr<const Holding> dropped;  // its memory goes once no Read holds it
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::Ok();
  reserved_ -= std::min(reserved_, it->second.reserved);
  DropTexts(it->second.texts);
  dropped = std::move(it->second.holding);
  entries_.erase(it);
  return Status::Ok();
}

Result<Removal> VolatileStore::Remove(const std::string& id, bool force, uint64_t now_ms) {
  Removal removal;
  std::shared_ptr<const Holding> removed;  // given back after the lock is let go
  {
    MutexLock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
    const RetainedDelivery& d = it->second.delivery;
    WRIT_RETURN_IF_ERROR(
        CheckRemovable(id, d.held_until_ms, now_ms, force, &removal.promise_broken));
    removal.id = id;
    removal.retention = d.retention;
    removal.bytes = d.meta.bytes;
    removal.held_until_ms = d.held_until_ms;
    reserved_ -= std::min(reserved_, it->second.reserved);
    DropTexts(it->second.texts);
    removed = std::move(it->second.holding);
    entries_.erase(it);
  }
  return removal;
}

Result<std::vector<std::string>> VolatileStore::Expired(uint64_t now_ms) {
  MutexLock lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, entry] : entries_) {
    const uint64_t until = entry.delivery.held_until_ms;
    if (until != 0 && until <= now_ms) ids.push_back(id);
  }
  return ids;
}

Status VolatileStore::ReadPieces(const std::vector<Piece>& pieces, const std::string& id,
                                 uint64_t bytes, uint64_t offset, std::span<uint8_t> out) const {
  if (offset > bytes || out.size() > bytes - offset) {
    return Status::InvalidArgument("read past the end of delivery " + id);
  }
  while (!out.empty()) {
    const size_t i = static_cast<size_t>(offset / extent_bytes_);
    const uint64_t within = offset - i * extent_bytes_;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), pieces[i].length - within));
    Status s = arena_->Read(pieces[i].at + within, out.first(n));
    if (!s.ok()) return s.Annotate("volatile store: read of " + id);
    out = out.subspan(n);
    offset += n;
  }
  return Status::Ok();
}

}  // namespace writ::store
