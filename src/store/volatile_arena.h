// The volatile store's memory: in memory, one range of anonymous memory on transparent
// huge pages (or, where the kernel refuses so large a private mapping, one memory file,
// memfd, mapped once); else one unlinked file in a scratch directory. It is sized once for
// everything the store can hold and mapped into the receiver once. A delivery is placed at
// offsets in it, so nothing a delivery holds is a kernel object of its own: no descriptor,
// no mapping, no memory file (a receiver holding 100,000 small deliveries must not run into
// the kernel's map count or fd limit).
//
// Why huge pages: a first write to a fresh 4 KiB page costs about 5 us on a virtual
// machine, even after MADV_POPULATE_WRITE (bench/first_touch.c, docs/benchmarks.md), and
// a small delivery writes its bytes and receipts into two or three fresh pages; one huge
// page takes that cost once per 2 MiB. Shared memory (a memfd) gets huge pages only where
// the host enables them for shmem, which Debian's kernels do not by default.
//
// The arena is cut into extents (64 MiB). A delivery's whole extents are extents of the
// arena; what is shorter (a small delivery, or a delivery's tail) is a slot in a slab: an
// extent cut into slots of one power-of-two size, from 64 bytes to half an extent. A slab's
// memory is provisioned (in memory MADV_POPULATE_WRITE; in a file fallocate) 2 MiB (one huge
// page) or a slot at a time as it fills, not per delivery. An emptied slab keeps its first
// 2 MiB, provisioned, as the spare of its slot size (one per size), so that a receiver whose
// deliveries are removed as fast as they come does not give a huge page back and clear a
// new one for each; the rest of its memory, and any other emptied slab's, goes back to the
// host, and a spare becomes a free extent again whenever one is needed. What a slot held is
// cleared when it is given back: the next holder never sees it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "store/env.h"

namespace writ::store {

class VolatileArena {
 public:
  // `extents` extents of `extent_bytes` (whole pages) each; memory when `scratch_dir` is
  // empty.
  static Result<std::unique_ptr<VolatileArena>> Open(Env* env, const std::string& scratch_dir,
                                                     uint64_t extent_bytes, size_t extents);
  ~VolatileArena();
  VolatileArena(const VolatileArena&) = delete;
  VolatileArena& operator=(const VolatileArena&) = delete;

  bool in_memory() const { return base_ != nullptr; }
  // In memory: anonymous memory (true) or a memory file, memfd (false).
  bool anonymous() const { return base_ != nullptr && fd_ < 0; }
  // Where offset `at` of the file is mapped (in memory only).
  uint8_t* At(uint64_t at) const { return base_ + at; }
  uint64_t extent_bytes() const { return extent_bytes_; }
  // The slot size a piece of `bytes` takes, or the extent size when it takes a whole one.
  uint64_t SlotSize(uint64_t bytes) const;

  // A whole free extent's offset: `prefer` if that one is free (a delivery's next extent
  // beside its last, so that windows across both are one range), else the lowest. With
  // `only_preferred`, nothing unless `prefer` is free. Its memory is not provisioned.
  std::optional<uint64_t> TakeExtent(std::optional<uint64_t> prefer, bool only_preferred = false);
  // Gives an extent back, its memory with it (what it held is gone: it reads as zeros).
  void GiveExtent(uint64_t at);
  // A slot of SlotSize(bytes) (under an extent) with memory behind its first `bytes`.
  // Refused (space) when no extent is free for a new slab.
  Result<uint64_t> TakeSlot(uint64_t bytes);
  // Clears the slot's first `used` bytes and frees it.
  void GiveSlot(uint64_t at, uint64_t used);

  // Memory (or blocks) for [at, at + length) exist now, and in memory are mapped: writes
  // there take no page fault, and a host out of memory fails here rather than there.
  Status Provision(uint64_t at, uint64_t length);
  // Zeros [at, at + length), keeping its memory.
  Status Clear(uint64_t at, uint64_t length);
  Status Write(uint64_t at, std::span<const uint8_t> bytes);
  Status Read(uint64_t at, std::span<uint8_t> out) const;

  // Extents free (a spare slab counts: it is given up when an extent is needed), and slabs
  // (spares included), for tests and metrics.
  size_t free_extents() const;
  size_t slabs() const;

 private:
  VolatileArena(Env* env, int fd, uint8_t* base, uint64_t extent_bytes, size_t extents);
  struct Slab {
    uint64_t slot = 0;           // its slot size
    uint64_t bump = 0;           // slots from here on were never used
    uint64_t provisioned = 0;    // bytes from its start with memory behind them
    uint64_t used = 0;           // slots held
    std::vector<uint32_t> free;  // offsets within it of slots given back
  };
  Result<uint64_t> TakeSlotLocked(uint64_t slot, uint64_t bytes) REQUIRES(mu_);
  // Makes a spare slab a free extent again (its memory given back): `at`'s when it is one,
  // else any. False when there is none.
  bool FreeSpare(std::optional<uint64_t> at) REQUIRES(mu_);
  void DropSlab(std::map<uint64_t, Slab>::iterator it) REQUIRES(mu_);
  Status ProvisionSlab(uint64_t extent, Slab& slab, uint64_t through) REQUIRES(mu_);
  // Gives the memory or blocks of [at, at + length) back: they read as zeros after.
  Status Discard(uint64_t at, uint64_t length);

  Env* env_;
  int fd_;         // -1: anonymous memory
  uint8_t* base_;  // nullptr: a scratch file, written and read with pwrite/pread
  uint64_t extent_bytes_;
  size_t extents_;
  mutable Mutex mu_;
  std::set<uint64_t> free_ GUARDED_BY(mu_);                           // extent offsets
  std::map<uint64_t, Slab> slabs_ GUARDED_BY(mu_);                    // by extent offset
  std::map<uint64_t, std::set<uint64_t>> with_room_ GUARDED_BY(mu_);  // slot size -> slabs
  std::map<uint64_t, uint64_t> spare_ GUARDED_BY(mu_);                // slot size -> its empty slab
};

}  // namespace writ::store
