#include "store/volatile_arena.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace writ::store {

namespace {

constexpr uint64_t kArenaMinSlot = 64;
// Anonymous memory starts on a huge page, so that extents and provisioning steps are whole
// huge pages.
constexpr uint64_t kHugePage = 2ull << 20;
// A slab's memory is provisioned this much at a time (or a slot, when larger): one
// transparent huge page, one system call per 2 MiB of small deliveries, not per delivery.
constexpr uint64_t kArenaProvisionStep = kHugePage;
// Address space the arena may take (the memory behind it is bounded by the capacity).
constexpr uint64_t kArenaMaxBytes = 1ull << 46;

}  // namespace

Result<std::unique_ptr<VolatileArena>> VolatileArena::Open(Env* env, const std::string& scratch_dir,
                                                           uint64_t extent_bytes, size_t extents) {
  if (extents == 0 || extents > kArenaMaxBytes / extent_bytes) {
    return Status::InvalidArgument(
        "volatile store: the capacity asks for " + std::to_string(extents) + " extents of " +
        std::to_string(extent_bytes) + " bytes, more address space than the store may map");
  }
  const uint64_t size = extent_bytes * extents;
  if (scratch_dir.empty()) {
    // A strict overcommit policy may refuse a private mapping this large: a memory file then.
    auto memory = env->MapMemory(size, kHugePage);
    if (memory.ok()) {
      return std::unique_ptr<VolatileArena>(
          new VolatileArena(env, -1, *memory, extent_bytes, extents));
    }
  }
  auto opened =
      scratch_dir.empty() ? env->OpenMemory("writ-volatile") : env->OpenUnlinked(scratch_dir);
  if (!opened.ok()) {
    return opened.status().Annotate(scratch_dir.empty()
                                        ? "volatile store: cannot create its memory file"
                                        : "volatile store: cannot create a file in " + scratch_dir);
  }
  const int fd = *opened;
  Status sized = env->Truncate(fd, size);
  uint8_t* base = nullptr;
  if (sized.ok() && scratch_dir.empty()) {
    auto mapped = env->MapShared(fd, size);
    if (mapped.ok()) {
      base = *mapped;
    } else {
      sized = mapped.status();
    }
  }
  if (!sized.ok()) {
    (void)env->Close(fd);
    return sized.Annotate("volatile store: sizing and mapping its memory of " +
                          std::to_string(size) + " bytes");
  }
  return std::unique_ptr<VolatileArena>(new VolatileArena(env, fd, base, extent_bytes, extents));
}

VolatileArena::VolatileArena(Env* env, int fd, uint8_t* base, uint64_t extent_bytes, size_t extents)
    : env_(env), fd_(fd), base_(base), extent_bytes_(extent_bytes), extents_(extents) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < extents; ++i) free_.insert(free_.end(), i * extent_bytes);
}

VolatileArena::~VolatileArena() {
  if (base_ != nullptr) (void)env_->Unmap(base_, extent_bytes_ * extents_);
  if (fd_ >= 0) (void)env_->Close(fd_);
}

uint64_t VolatileArena::SlotSize(uint64_t bytes) const {
  const uint64_t slot = std::bit_ceil(std::max(bytes, kArenaMinSlot));
  return slot <= extent_bytes_ / 2 ? slot : extent_bytes_;
}

std::optional<uint64_t> VolatileArena::TakeExtent(std::optional<uint64_t> prefer,
                                                  bool only_preferred) {
  MutexLock lock(mu_);
  if (prefer && !free_.contains(*prefer)) (void)FreeSpare(*prefer);
  auto it = prefer ? free_.find(*prefer) : free_.end();
  if (it == free_.end()) {
    if (only_preferred) return std::nullopt;
    if (free_.empty() && !FreeSpare(std::nullopt)) return std::nullopt;
    it = free_.begin();
  }
  const uint64_t at = *it;
  free_.erase(it);
  return at;
}

void VolatileArena::GiveExtent(uint64_t at) {
  // Punched: its memory goes back to the host and any later use starts from zeros.
  if (!Discard(at, extent_bytes_).ok()) (void)Clear(at, extent_bytes_);
  MutexLock lock(mu_);
  free_.insert(at);
}

Result<uint64_t> VolatileArena::TakeSlot(uint64_t bytes) {
  const uint64_t slot = SlotSize(bytes);
  if (slot >= extent_bytes_) return Status::InvalidArgument("volatile store: not a slab slot");
  MutexLock lock(mu_);
  return TakeSlotLocked(slot, bytes);
}

Result<uint64_t> VolatileArena::TakeSlotLocked(uint64_t slot, uint64_t bytes) {
  std::set<uint64_t>& room = with_room_[slot];
  if (room.empty()) {
    if (free_.empty() && !FreeSpare(std::nullopt)) {
      return Status::Refused(
          "space: the volatile store's memory has no free extent for a slab of " +
          std::to_string(slot) + "-byte slots");
    }
    const uint64_t extent = *free_.begin();
    free_.erase(free_.begin());
    slabs_[extent].slot = slot;
    room.insert(extent);
  }
  const uint64_t extent = *room.begin();
  Slab& slab = slabs_.at(extent);
  if (slab.used == 0) {  // a new slab, or the spare of its size, in use again
    if (auto spare = spare_.find(slot); spare != spare_.end() && spare->second == extent) {
      spare_.erase(spare);
    }
  }
  uint64_t within = 0;
  if (!slab.free.empty()) {
    within = slab.free.back();
    slab.free.pop_back();
  } else {
    within = slab.bump;
    slab.bump += slot;
  }
  Status provisioned = ProvisionSlab(extent, slab, within + bytes);
  if (!provisioned.ok()) {
    slab.free.push_back(static_cast<uint32_t>(within));
    if (slab.used == 0) DropSlab(slabs_.find(extent));
    return provisioned;
  }
  ++slab.used;
  if (slab.free.empty() && slab.bump + slot > extent_bytes_) room.erase(extent);
  return extent + within;
}

Status VolatileArena::ProvisionSlab(uint64_t extent, Slab& slab, uint64_t through) {
  if (through <= slab.provisioned) return Status::Ok();
  const uint64_t step = std::max(kArenaProvisionStep, slab.slot);
  const uint64_t to = std::min(extent_bytes_, (through + step - 1) / step * step);
  WRIT_RETURN_IF_ERROR(Provision(extent + slab.provisioned, to - slab.provisioned));
  slab.provisioned = to;
  return Status::Ok();
}

void VolatileArena::GiveSlot(uint64_t at, uint64_t used) {
  (void)Clear(at, used);
  MutexLock lock(mu_);
  const uint64_t extent = at / extent_bytes_ * extent_bytes_;
  auto it = slabs_.find(extent);
  if (it == slabs_.end()) return;
  Slab& slab = it->second;
  if (--slab.used == 0) {
    if (spare_.contains(slab.slot)) {
      // An empty slab gives its memory back; the extent may become anything next.
      DropSlab(it);
      return;
    }
    // The spare of its size: every slot is free and cleared, so it starts again from its
    // first one, keeping one provisioning step of memory.
    const uint64_t keep = std::min(slab.provisioned, std::max(kArenaProvisionStep, slab.slot));
    if (slab.provisioned > keep && !Discard(extent + keep, slab.provisioned - keep).ok()) {
      DropSlab(it);
      return;
    }
    slab.provisioned = keep;
    slab.bump = 0;
    slab.free.clear();
    spare_[slab.slot] = extent;
    with_room_[slab.slot].insert(extent);
    return;
  }
  slab.free.push_back(static_cast<uint32_t>(at - extent));
  with_room_[slab.slot].insert(extent);
}

void VolatileArena::DropSlab(std::map<uint64_t, Slab>::iterator it) {
  const uint64_t extent = it->first;
  const Slab& slab = it->second;
  if (slab.provisioned > 0) (void)Discard(extent, slab.provisioned);
  with_room_[slab.slot].erase(extent);
  auto spare = spare_.find(slab.slot);
  if (spare != spare_.end() && spare->second == extent) spare_.erase(spare);
  slabs_.erase(it);
  free_.insert(extent);
}

bool VolatileArena::FreeSpare(std::optional<uint64_t> at) {
  auto spare = spare_.begin();
  if (at) {
    while (spare != spare_.end() && spare->second != *at) ++spare;
  }
  if (spare == spare_.end()) return false;
  DropSlab(slabs_.find(spare->second));
  return true;
}

Status VolatileArena::Provision(uint64_t at, uint64_t length) {
  if (length == 0) return Status::Ok();
  if (fd_ >= 0) WRIT_RETURN_IF_ERROR(env_->Allocate(fd_, at, length, /*keep_size=*/true));
  if (base_ == nullptr) return Status::Ok();
  return env_->Populate(base_ + at, length);
}

Status VolatileArena::Discard(uint64_t at, uint64_t length) {
  if (fd_ < 0) return env_->DiscardMemory(base_ + at, length);
  return env_->Discard(fd_, at, length);
}

Status VolatileArena::Clear(uint64_t at, uint64_t length) {
  if (base_ != nullptr) {
    std::memset(base_ + at, 0, length);
    return Status::Ok();
  }
  static const std::vector<uint8_t> zeros(64 << 10, 0);
  while (length > 0) {
    const uint64_t n = std::min<uint64_t>(length, zeros.size());
    WRIT_RETURN_IF_ERROR(env_->WriteAt(fd_, std::span(zeros).first(n), at));
    at += n;
    length -= n;
  }
  return Status::Ok();
}

Status VolatileArena::Write(uint64_t at, std::span<const uint8_t> bytes) {
  if (base_ == nullptr) return env_->WriteAt(fd_, bytes, at);
  std::memcpy(base_ + at, bytes.data(), bytes.size());
  return Status::Ok();
}

Status VolatileArena::Read(uint64_t at, std::span<uint8_t> out) const {
  if (base_ == nullptr) return env_->ReadAt(fd_, out, at);
  std::memcpy(out.data(), base_ + at, out.size());
  return Status::Ok();
}

size_t VolatileArena::free_extents() const {
  MutexLock lock(mu_);
  return free_.size() + spare_.size();
}

size_t VolatileArena::slabs() const {
  MutexLock lock(mu_);
  return slabs_.size();
}

}  // namespace writ::store
