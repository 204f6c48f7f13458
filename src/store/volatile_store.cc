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
  VolatileWriter(VolatileStore& store, DeliveryMeta meta) : store_(store), meta_(std::move(meta)) {}
  ~VolatileWriter() override {
    if (map_ != nullptr) (void)store_.env_->Unmap(map_, MappedBytes());
    for (uint8_t* own : own_maps_) {
      if (own != nullptr) (void)store_.env_->Unmap(own, store_.extent_bytes_);
    }
    if (!committed_) {
      // Its pages hold what a sender wrote (and a sender may notify chunks without writing
      // them). Its windows were revoked before this writer is dropped (InboundDelivery's
      // members), so nothing writes here any more: whole extents go to the reserve, which
      // clears them before any delivery can have them; the others are closed.
      for (size_t i = 0; i < extents_.size(); ++i) {
        if (ExtentLength(i) == store_.extent_bytes_ && store_.Recycle(extents_[i])) continue;
        (void)store_.env_->Close(extents_[i]);
      }
      store_.Release(taken_);
    }
    store_.WriterDone();
  }

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    if (offset > meta_.bytes || bytes.size() > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: write past the delivery's end");
    }
    if (map_ != nullptr && bytes.data() == map_ + offset) {
      placed_ += bytes.size();  // the transport put them here already
      return Status::Ok();
    }
    WRIT_RETURN_IF_ERROR(AllocateThrough(offset + bytes.size()));
    while (!bytes.empty()) {
      const size_t i = static_cast<size_t>(offset / store_.extent_bytes_);
      const uint64_t within = offset - i * store_.extent_bytes_;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(bytes.size(), store_.extent_bytes_ - within));
      Status s = store_.env_->WriteAt(extents_[i], bytes.first(n), within);
      if (!s.ok()) return s.Annotate("volatile store: write");
      bytes = bytes.subspan(n);
      offset += n;
    }
    return Status::Ok();
  }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    if (offset + out.size() > extents_.size() * store_.extent_bytes_) {
      return Status::InvalidArgument("volatile store: read of bytes of " + meta_.id +
                                     " not yet written");
    }
    return store_.ReadExtents(extents_, meta_.id, meta_.bytes, offset, out);
  }

  // The extents are mapped side by side into one address range; each placement allocates
  // its range first, so a store out of memory refuses the window instead of a page fault
  // failing later.
  Result<uint8_t*> Placement(uint64_t offset, uint64_t length) override {
    if (offset > meta_.bytes || length > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: placement past the delivery's end");
    }
    // The capacity for the window is taken now, placed or copied.
    WRIT_RETURN_IF_ERROR(AllocateThrough(offset + length));
    // Small deliveries are copied: four syscalls of mapping cost more than copying them.
    if (!store_.dir_.empty() || meta_.bytes < kPlacementMinBytes) return nullptr;
    if (map_ == nullptr) {
      auto range = store_.env_->ReserveAddresses(MappedBytes());
      if (!range.ok())
        return range.status().Annotate("volatile store: mapping the memory of " + meta_.id);
      map_ = *range;
      for (size_t i = 0; i < extents_.size(); ++i) WRIT_RETURN_IF_ERROR(MapExtent(i));
    }
    // Mapped in bulk now rather than faulted in page by page as the transport writes;
    // extents moved in from the reserve are mapped already.
    const uint64_t e = store_.extent_bytes_;
    for (size_t i = static_cast<size_t>(offset / e); i * e < offset + length; ++i) {
      if (premapped_[i]) continue;
      const uint64_t from = std::max(offset, i * e);
      const uint64_t to = std::min(offset + length, i * e + ExtentLength(i));
      Status populated = store_.env_->Populate(map_ + from, to - from);
      if (!populated.ok())
        return populated.Annotate("volatile store: mapping memory for " + meta_.id);
    }
    return map_ + offset;
  }

  void SetDigest(std::vector<uint8_t> digest) override { meta_.digest = std::move(digest); }
  Result<RetentionEvidence> Commit(const std::vector<std::string>& receipts) override {
    WRIT_RETURN_IF_ERROR(AllocateThrough(meta_.bytes));
    VolatileStore::Entry entry;
    entry.delivery.meta = meta_;
    entry.delivery.retention = RetentionClass::kVolatile;
    entry.delivery.receipts = receipts;
    const uint64_t held_until =
        store_.ttl_.count() > 0 ? NowUnixMs() + static_cast<uint64_t>(store_.ttl_.count()) : 0;
    entry.delivery.held_until_ms = held_until;
    entry.reserved = taken_;
    auto mappings = std::make_shared<VolatileStore::Mappings>();
    mappings->env = store_.env_;
    for (size_t i = 0; i < extents_.size() && mappings->maps.size() == i; ++i) {
      if (map_ != nullptr) {
        // Placed: the extents' populated mappings (one per extent, side by side) pass to the
        // entry. Mapping them anew and unmapping these would cost a page walk of the whole
        // delivery on its path, and its readers a fault per page.
        mappings->maps.emplace_back(map_ + i * store_.extent_bytes_, ExtentLength(i));
        continue;
      }
      auto mapped = store_.env_->MapShared(extents_[i], ExtentLength(i));
      if (mapped.ok()) mappings->maps.emplace_back(*mapped, ExtentLength(i));
    }
    map_ = nullptr;  // the entry unmaps it, or has, if it was not inserted
    const bool all_mapped = mappings->maps.size() == extents_.size();
    entry.extents = std::move(mappings);  // unmapped with the entry if it is not inserted
    WRIT_RETURN_IF_ERROR(all_mapped
                             ? store_.Insert(std::move(entry))
                             : Status::Io("volatile store: cannot map the memory of " + meta_.id));
    for (int fd : extents_) (void)store_.env_->Close(fd);  // the mappings keep the memory
    committed_ = true;                                     // the store owns the extents now
    RetentionEvidence ev;
    ev.retention = RetentionClass::kVolatile;
    ev.held_until_ms = held_until;
    ev.ttl = store_.ttl_;
    ev.acknowledged_point =
        store_.dir_.empty()
            ? std::string(placed_ > 0 ? "bytes placed by the transport directly into"
                                      : "bytes written (pwrite) to") +
                  " anonymous memory files (memfd) held open by the receiver process; index "
                  "entry in the process's memory"
            : "bytes written (pwrite, no sync) to unlinked temporary files held open by the "
              "receiver process; index entry in the process's memory";
    ev.promise_after_failure =
        "none: the delivery is held only while this receiver process runs; after a crash or "
        "restart it is gone";
    const std::string files = std::to_string(extents_.size()) +
                              (store_.dir_.empty() ? std::string(" memfd(s) (host memory")
                                                   : " unlinked file(s) in " + store_.dir_) +
                              (warm_ > 0 && store_.dir_.empty()
                                   ? ", " + std::to_string(warm_) + " from the touched reserve)"
                                   : std::string(store_.dir_.empty() ? ")" : ""));
    ev.evidence =
        (placed_ > 0 ? std::to_string(placed_) + " bytes placed by RDMA writes into a " +
                           "registered mapping of the memory files, " +
                           std::to_string(meta_.bytes - placed_) + " bytes by pwrite, into "
                     : "pwrite of " + std::to_string(meta_.bytes) + " bytes into ") +
        files + " returned success; no fsync was done";
    return ev;
  }

 private:
  uint64_t ExtentLength(size_t i) const {
    return std::min(store_.extent_bytes_, meta_.bytes - i * store_.extent_bytes_);
  }
  uint64_t MappedBytes() const {
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return (meta_.bytes + page - 1) / page * page;
  }
  Status MapExtent(size_t i) {
    uint8_t* at = map_ + i * store_.extent_bytes_;
    Status s;
    if (own_maps_[i] != nullptr) {
      s = store_.env_->MoveMapping(own_maps_[i], store_.extent_bytes_, at);
      if (s.ok()) {
        own_maps_[i] = nullptr;
        premapped_[i] = true;
      }
    } else {
      s = store_.env_->MapSharedAt(at, extents_[i], ExtentLength(i));
    }
    if (!s.ok()) return s.Annotate("volatile store: mapping the memory of " + meta_.id);
    return Status::Ok();
  }

  // Memory for the delivery exists before the writes, an extent at a time: a receiver
  // that cannot hold the bytes fails here, naming the delivery, rather than mid-write.
  Status AllocateThrough(uint64_t end) {
    while (extents_.size() * store_.extent_bytes_ < end) {
      const size_t i = extents_.size();
      const uint64_t length = ExtentLength(i);
      WRIT_RETURN_IF_ERROR(store_.Take(length, meta_.id));
      taken_ += length;
      VolatileStore::ReadyExtent ready;
      if (length == store_.extent_bytes_) ready = store_.TakeReady();
      int fd = ready.fd;
      if (fd >= 0) {
        ++warm_;
      } else {
        auto opened = store_.dir_.empty() ? store_.env_->OpenMemory("writ-volatile")
                                          : store_.env_->OpenUnlinked(store_.dir_);
        if (!opened.ok()) {
          return opened.status().Annotate(
              store_.dir_.empty() ? "volatile store: cannot create a memory file for " + meta_.id
                                  : "volatile store: cannot create a temporary file in " +
                                        store_.dir_ + " for " + meta_.id);
        }
        fd = *opened;
        Status s = store_.env_->Allocate(fd, 0, length, /*keep_size=*/false);
        if (!s.ok()) {
          (void)store_.env_->Close(fd);
          return s.Annotate("volatile store: allocating memory for " + meta_.id);
        }
      }
      extents_.push_back(fd);
      own_maps_.push_back(ready.map);
      premapped_.push_back(false);
      if (map_ != nullptr) WRIT_RETURN_IF_ERROR(MapExtent(i));
    }
    return Status::Ok();
  }

  static constexpr uint64_t kPlacementMinBytes = 1ull << 20;
  VolatileStore& store_;
  DeliveryMeta meta_;
  std::vector<int> extents_;        // extent i holds bytes [i * store_.extent_bytes_, ...)
  std::vector<uint8_t*> own_maps_;  // a reserve extent's mapping, until moved into map_
  std::vector<bool> premapped_;     // its pages were mapped when it was moved into map_
  bool committed_ = false;
  uint8_t* map_ = nullptr;  // all extents side by side, once a placement was asked for
  uint64_t placed_ = 0;     // bytes the transport placed directly
  uint64_t warm_ = 0;       // extents taken from the reserve
  uint64_t taken_ = 0;      // of the store's capacity, for the extents allocated so far
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
      new VolatileStore(std::move(options.scratch_dir), options.capacity, env));
  store->extent_bytes_ = options.extent_bytes;
  store->on_event_ = std::move(options.on_event);
  store->ttl_ = options.ttl;
  store->reserve_extents_ =
      static_cast<size_t>((options.reserve + options.extent_bytes - 1) / options.extent_bytes);
  store->reserve_limit_extents_ = static_cast<size_t>(options.reserve_limit / options.extent_bytes);
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
  for (const ReadyExtent& r : ready_) {
    if (r.map != nullptr) (void)env_->Unmap(r.map, extent_bytes_);
    (void)env_->Close(r.fd);
  }
  for (int fd : recycled_) (void)env_->Close(fd);
  entries_.clear();  // unmaps what no read holds (none: the store is going)
}

size_t VolatileStore::ready_extents() {
  MutexLock lock(mu_);
  return ready_.size();
}

size_t VolatileStore::target_extents() {
  MutexLock lock(mu_);
  return TargetExtents();
}

bool VolatileStore::Recycle(int fd) {
  if (!dir_.empty()) return false;  // files in a scratch directory: not memory to keep
  MutexLock lock(mu_);
  if (stopping_ || ready_.size() + recycled_.size() >= TargetExtents()) return false;
  recycled_.push_back(fd);  // the filler is woken by WriterDone
  return true;
}

VolatileStore::ReadyExtent VolatileStore::TakeReady() {
  MutexLock lock(mu_);
  if (ready_.empty()) return {};
  const ReadyExtent ready = ready_.back();
  ready_.pop_back();
  reserve_cv_.notify_all();
  return ready;
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
    int recycled = -1;
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
    Result<ReadyExtent> ready = NextReadyExtent(recycled);
    if (!ready.ok()) {
      if (on_event_) on_event_("volatile reserve: cannot fill it: " + ready.status().ToString());
      MutexLock lock(mu_);
      lock.WaitFor(reserve_cv_, std::chrono::seconds(10),
                   [&]() REQUIRES(mu_) { return stopping_; });
      if (stopping_) return;
      continue;
    }
    MutexLock lock(mu_);
    ready_.push_back(*ready);
  }
}

Result<VolatileStore::ReadyExtent> VolatileStore::NextReadyExtent(int recycled_fd) {
  int fd = recycled_fd;
  if (fd < 0) {
    Result<int> opened = env_->OpenMemory("writ-reserve");
    if (!opened.ok()) return opened.status();
    fd = *opened;
    Status s = env_->Allocate(fd, 0, extent_bytes_, /*keep_size=*/false);
    if (!s.ok()) {
      (void)env_->Close(fd);
      return s;
    }
  }
  auto mapped = env_->MapShared(fd, extent_bytes_);
  if (!mapped.ok()) {
    (void)env_->Close(fd);
    return mapped.status();
  }
  // A recycled extent is cleared over all of it: what one delivery's sender wrote is never
  // in another's memory (docs/security.md). A new one is written once, so that its pages
  // exist and the host has backed them. Either way every page ends up mapped, and the
  // mapping is kept, to be moved into a delivery's range as it is.
  Status s;
  if (recycled_fd >= 0) {
    std::memset(*mapped, 0, extent_bytes_);
  } else {
    s = env_->Populate(*mapped, extent_bytes_);
  }
  if (!s.ok()) {
    (void)env_->Unmap(*mapped, extent_bytes_);
    (void)env_->Close(fd);
    return s;
  }
  return ReadyExtent{fd, *mapped};
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

Status VolatileStore::Insert(Entry entry) {
  MutexLock lock(mu_);
  auto [it, inserted] = entries_.emplace(entry.delivery.meta.id, entry);
  if (!inserted) {
    return Status::Refused("conflicting id: " + entry.delivery.meta.id + " is already retained");
  }
  return Status::Ok();
}

Result<std::optional<RetainedDelivery>> VolatileStore::Lookup(const std::string& id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::optional<RetainedDelivery>();
  return std::optional<RetainedDelivery>(it->second.delivery);
}

Result<std::optional<RetainedDelivery>> VolatileStore::LookupVerified(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto held, Lookup(id));
  if (!held) return held;
  WRIT_RETURN_IF_ERROR(VerifyHeldBytes(*this, held->meta));
  return held;
}

Result<std::unique_ptr<PayloadWriter>> VolatileStore::Begin(const DeliveryMeta& meta,
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
  return std::unique_ptr<PayloadWriter>(new VolatileWriter(*this, meta));
}

Status VolatileStore::AppendReceipt(const std::string& id, const std::string& receipt_json) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
  it->second.delivery.receipts.push_back(receipt_json);
  return Status::Ok();
}

uint64_t VolatileStore::used_bytes() const {
  MutexLock lock(mu_);
  return reserved_;
}

Status VolatileStore::Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) {
  std::shared_ptr<const Mappings> extents;
  uint64_t bytes = 0;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
    extents = it->second.extents;  // kept mapped while this read runs, even if removed
    bytes = it->second.delivery.meta.bytes;
  }
  return ReadByExtent(id, bytes, offset, out,
                      [&](size_t i, uint64_t within, std::span<uint8_t> part) {
                        std::memcpy(part.data(), extents->maps[i].first + within, part.size());
                        return Status::Ok();
                      });
}

Status VolatileStore::DropSuperseded(const std::string& id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::Ok();
  reserved_ -= std::min(reserved_, it->second.reserved);
  entries_.erase(it);  // its memory goes once no Read holds its mappings
  return Status::Ok();
}

Result<Removal> VolatileStore::Remove(const std::string& id, bool force, uint64_t now_ms) {
  Removal removal;
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

Status VolatileStore::ReadExtents(const std::vector<int>& extents, const std::string& id,
                                  uint64_t bytes, uint64_t offset, std::span<uint8_t> out) {
  return ReadByExtent(id, bytes, offset, out,
                      [&](size_t i, uint64_t within, std::span<uint8_t> part) {
                        Status s = env_->ReadAt(extents[i], part, within);
                        return s.ok() ? s : s.Annotate("volatile store: read of " + id);
                      });
}

Status VolatileStore::ReadByExtent(
    const std::string& id, uint64_t bytes, uint64_t offset, std::span<uint8_t> out,
    const std::function<Status(size_t, uint64_t, std::span<uint8_t>)>& read_part) const {
  if (offset > bytes || out.size() > bytes - offset) {
    return Status::InvalidArgument("read past the end of delivery " + id);
  }
  while (!out.empty()) {
    const size_t i = static_cast<size_t>(offset / extent_bytes_);
    const uint64_t within = offset - i * extent_bytes_;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), extent_bytes_ - within));
    WRIT_RETURN_IF_ERROR(read_part(i, within, out.first(n)));
    out = out.subspan(n);
    offset += n;
  }
  return Status::Ok();
}

}  // namespace writ::store
