// The receiver's digest workers: every delivery's bytes are digested here, never on a
// connection's thread nor on the thread that drives libfabric progress.
//
// A DigestStream is one delivery's digest. Sequential rules (xxh3-128, crc32c, sha256) fold
// its ranges in order, one job at a time per delivery (deliveries run in parallel); a tree
// rule digests every whole 1 MiB leaf as its own job, in parallel, and folds the root as
// leaves finish. A job holds a view of a window, never a copy. The window must stay
// readable and unchanged until its range is reported digested or the stream is cancelled:
// after Cancel() returns no job reads any range of the stream again, so the window may go
// back to the pool and on to another delivery (docs/architecture.md, "Validation").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "vocabulary/digest.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ::receiver {

class DigestStream;

class DigestPool {
 public:
  // `threads` workers (at least one).
  static Result<std::unique_ptr<DigestPool>> Start(uint32_t threads);
  // Stops the workers; jobs still queued are dropped unread (their streams were cancelled).
  ~DigestPool();
  DigestPool(const DigestPool&) = delete;
  DigestPool& operator=(const DigestPool&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(workers_.size()); }
  // One delivery of `total_bytes` digested under `rule`. `wake` is called, on a worker,
  // whenever a submitted range has been digested whole.
  Result<std::shared_ptr<DigestStream>> Open(Rule rule, uint64_t total_bytes,
                                             std::function<void()> wake);
  // Runs `task` on a worker, after the tasks posted before it.
  void Post(std::function<void()> task);

 private:
  DigestPool() = default;
  void Work();

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

class DigestStream : public std::enable_shared_from_this<DigestStream> {
 public:
  // Use DigestPool::Open.
  DigestStream(DigestPool& pool, Rule rule, uint64_t total_bytes,
               std::unique_ptr<vocabulary::Digester> lane,
               std::unique_ptr<vocabulary::Digester> root, std::function<void()> wake);

  // kHereIfSmall, sequential rules: a range this small, with nothing queued before it, is
  // digested by Submit itself (a ring slot's copy is at most this long).
  static constexpr size_t kInlineDigestBytes = 64 * 1024;
  enum class Where { kPool, kHereIfSmall };

  // The delivery's bytes at `offset`, in order of offset (the connection's thread). Reported
  // by TakeDone as `token` once digested whole; at once when digested here, without a wake.
  void Submit(uint64_t token, uint64_t offset, std::span<const uint8_t> bytes,
              Where where = Where::kPool);
  // The tokens digested whole since the last call.
  std::vector<uint64_t> TakeDone();
  // Everything submitted has been digested.
  bool idle() const;
  // The digest of every byte submitted; call once, when idle and every byte was submitted.
  // Empty if a digest failed, which never equals a digest.
  std::vector<uint8_t> Finish();
  // No job reads a submitted range after this returns: queued jobs are dropped unread, and
  // it waits for the jobs reading now. Idempotent.
  void Cancel();

  // Observations for tests: ranges whose reading began, and ended.
  uint64_t reads_started() const { return reads_started_.load(); }
  uint64_t reads_finished() const { return reads_finished_.load(); }

 private:
  struct Piece {
    uint64_t token = 0;
    std::span<const uint8_t> bytes;
    uint64_t leaf = 0;        // tree rules: the leaf it is (part of)
    bool opens_leaf = false;  // tree rules, lane: the first bytes of its leaf
    bool closes_leaf = false;
  };

  // False when the range holds none of the delivery's bytes (done at once).
  bool SubmitTree(uint64_t token, uint64_t offset, std::span<const uint8_t> bytes) REQUIRES(mu_);
  void Enqueue(const Piece& piece) REQUIRES(mu_);
  void RunLane();
  void RunLeaf(const Piece& piece);
  // Whether reading may begin (not cancelled); counts the read.
  bool BeginRead();
  // Ends a read: the piece's token advances; wakes the connection when it is done.
  void EndRead(const Piece& piece, std::optional<std::vector<uint8_t>> leaf_digest);
  void FoldLeaf(uint64_t leaf, std::vector<uint8_t> digest) REQUIRES(mu_);

  DigestPool& pool_;
  const Rule rule_;
  const bool tree_;
  const uint64_t total_bytes_;
  // Sequential rules: the delivery's digest; tree rules: the leaf that spans ranges. Only
  // the one lane job touches it (lane_running_), then Finish once idle.
  std::unique_ptr<vocabulary::Digester> lane_;
  const std::function<void()> wake_;

  mutable Mutex mu_;
  std::condition_variable no_reads_;
  bool cancelled_ GUARDED_BY(mu_) = false;
  bool lane_running_ GUARDED_BY(mu_) = false;
  // A few pieces (one per window) at most; a vector because a small delivery, digested in
  // Submit, never queues one and libstdc++'s deque allocates as it is constructed.
  std::vector<Piece> lane_queue_ GUARDED_BY(mu_);
  uint32_t reading_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint32_t> pieces_left_ GUARDED_BY(mu_);  // token -> pieces not yet read
  std::vector<uint64_t> done_ GUARDED_BY(mu_);
  // Tree rules: the root's input so far (le64(total) and the leaves before next_leaf_), and
  // the digests of leaves that finished ahead of an earlier one.
  std::unique_ptr<vocabulary::Digester> root_ GUARDED_BY(mu_);
  uint64_t next_leaf_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::vector<uint8_t>> early_leaves_ GUARDED_BY(mu_);
  bool failed_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> reads_started_{0};
  std::atomic<uint64_t> reads_finished_{0};
};

}  // namespace writ::receiver
