// The volatile store: retained bytes live in memory files (memfd) or, with a
// scratch directory, unlinked temporary files, held open by the receiver process
// (not the process's heap; bounded by the store's capacity whatever the delivery
// size). They vanish when the process ends.
//
// A delivery is held in extents (64 MiB), one file each (the last one shorter),
// mapped side by side when the transport places into it. With a reserve, a background
// thread keeps that many bytes of extents ready with their memory already touched (refilled
// only while no volatile delivery is being received: touching fresh memory on this
// project's VMs slows every other thread's memory access down with it), so a
// delivery's writes land in memory the host has backed instead of paying for first touch
// (on this project's VMs, 0.2-0.4 GB/s: docs/benchmarks.md). Reserve memory is on top
// of the capacity. An adaptive reserve (the serve's default) starts empty and grows to the
// largest delivery announced, up to a bound; extents of abandoned deliveries are recycled
// into it (cleared first: what a sender wrote for one delivery is never in another's
// memory) instead of going back to the host.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "store/env.h"
#include "store/store.h"

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
  Result<std::unique_ptr<PayloadWriter>> Begin(const DeliveryMeta& meta,
                                               RetentionClass retention) override;
  Status AppendReceipt(const std::string& id, const std::string& receipt_json) override;
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override;
  // Drops the entry and gives its capacity back; its memory goes once no read holds it.
  Result<Removal> Remove(const std::string& id, bool force, uint64_t now_ms) override;
  Result<std::vector<std::string>> Expired(uint64_t now_ms) override;
  // The capacity, and how much of it is taken now (for metrics).
  uint64_t capacity() const { return capacity_; }
  uint64_t used_bytes() const;
  // The entry goes at once; its memory once no Read holds its mappings.
  Status DropSuperseded(const std::string& id) override;

 private:
  friend class VolatileWriter;
  // A retained delivery's extents, each mapped (extent i, ExtentLength(bytes, i) bytes) and
  // unmapped when the last holder lets go: a Read in progress keeps them while Remove drops
  // the entry.
  struct Mappings {
    Env* env = nullptr;
    std::vector<std::pair<uint8_t*, uint64_t>> maps;
    ~Mappings() {
      for (const auto& [at, length] : maps) (void)env->Unmap(at, length);
    }
  };
  // A retained delivery holds no file descriptor: each extent's file stays alive through
  // a shared mapping of it (a receiver holding many deliveries must not run out of fds).
  struct Entry {
    RetainedDelivery delivery;
    std::shared_ptr<const Mappings> extents;
    uint64_t reserved = 0;  // of the capacity, given back when it is removed
  };
  uint64_t ExtentLength(uint64_t bytes, size_t i) const {
    return std::min(extent_bytes_, bytes - i * extent_bytes_);
  }
  // Capacity is taken an extent at a time, as a delivery's windows are granted (not for the
  // whole announced size at once); Refused (space) when `bytes` more do not fit.
  Status Take(uint64_t bytes, const std::string& id);
  VolatileStore(std::string dir, uint64_t capacity, Env* env)
      : dir_(std::move(dir)), capacity_(capacity), env_(env) {}
  uint64_t extent_bytes_ = 64ull << 20;
  void Release(uint64_t bytes);
  // Splits [offset, offset + out.size()) of a delivery of `bytes` at extent boundaries and
  // reads each part with read_part(extent index, offset within it, part of out).
  Status ReadByExtent(
      const std::string& id, uint64_t bytes, uint64_t offset, std::span<uint8_t> out,
      const std::function<Status(size_t, uint64_t, std::span<uint8_t>)>& read_part) const;
  Status ReadExtents(const std::vector<int>& extents, const std::string& id, uint64_t bytes,
                     uint64_t offset, std::span<uint8_t> out);
  Status Insert(Entry entry);
  // A touched extent: its file and, when it comes from the filler, a mapping of all of it
  // with every page mapped (moved into place rather than faulted in again).
  struct ReadyExtent {
    int fd = -1;
    uint8_t* map = nullptr;
  };
  // A whole extent from the reserve; fd -1 when none is ready.
  ReadyExtent TakeReady();
  void FillReserve();
  // A touched extent for the reserve: a cleared recycled one, else a new one.
  Result<ReadyExtent> NextReadyExtent(int recycled_fd);
  void WriterDone();
  // Offers the extent (a whole one) of an abandoned delivery to the reserve; false when the
  // reserve has no room for it (the caller closes it).
  bool Recycle(int fd);
  size_t TargetExtents() const REQUIRES(mu_) {
    return std::max(reserve_extents_, std::min(reserve_limit_extents_, grown_extents_));
  }

  std::function<void(const std::string&)> on_event_;
  std::chrono::milliseconds ttl_{0};
  size_t reserve_extents_ = 0;
  size_t reserve_limit_extents_ = 0;
  size_t grown_extents_ GUARDED_BY(mu_) = 0;  // whole extents of the largest delivery announced
  std::vector<ReadyExtent> ready_ GUARDED_BY(mu_);
  std::vector<int> recycled_ GUARDED_BY(mu_);  // abandoned deliveries' extents, to be cleared
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t writers_ GUARDED_BY(mu_) = 0;  // deliveries being received: the reserve waits for 0
  std::condition_variable reserve_cv_;
  std::thread filler_;

  std::string dir_;
  uint64_t capacity_;
  Env* env_;
  mutable Mutex mu_;
  uint64_t reserved_ GUARDED_BY(mu_) = 0;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace writ::store
