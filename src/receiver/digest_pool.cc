#include "receiver/digest_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "common/thread.h"
#include "writ/vocabulary.h"

namespace writ::receiver {

using vocabulary::kTreeLeafBytes;

Result<std::unique_ptr<DigestPool>> DigestPool::Start(uint32_t threads) {
  std::unique_ptr<DigestPool> pool(new DigestPool());
  pool->workers_.resize(std::max<uint32_t>(1, threads));
  for (auto& worker : pool->workers_) {
    // On failure the destructor stops and joins the workers already started.
    WRIT_RETURN_IF_ERROR(StartThread(worker, "a digest worker", [p = pool.get()] { p->Work(); }));
  }
  return pool;
}

DigestPool::~DigestPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void DigestPool::Post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void DigestPool::Work() {
  pthread_setname_np(pthread_self(), "writ-digest");  // so its CPU can be told apart (bench)
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [this]() REQUIRES(mu_) { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

Result<std::shared_ptr<DigestStream>> DigestPool::Open(Rule rule, uint64_t total_bytes,
                                                       std::function<void()> wake) {
  const std::optional<Rule> base = vocabulary::TreeBase(rule);
  WRIT_ASSIGN_OR_RETURN(auto lane, vocabulary::Digester::Create(base.value_or(rule)));
  std::unique_ptr<vocabulary::Digester> root;
  if (base) {
    WRIT_ASSIGN_OR_RETURN(root, vocabulary::Digester::Create(*base));
  }
  return std::make_shared<DigestStream>(*this, rule, total_bytes, std::move(lane), std::move(root),
                                        std::move(wake));
}

DigestStream::DigestStream(DigestPool& pool, Rule rule, uint64_t total_bytes,
                           std::unique_ptr<vocabulary::Digester> lane,
                           std::unique_ptr<vocabulary::Digester> root, std::function<void()> wake)
    : pool_(pool),
      rule_(rule),
      tree_(root != nullptr),
      total_bytes_(total_bytes),
      lane_(std::move(lane)),
      wake_(std::move(wake)) {
  MutexLock lock(mu_);
  root_ = std::move(root);
  if (root_) {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(total_bytes >> (8 * i));
    root_->Update(length);
  }
}

void DigestStream::Submit(uint64_t token, uint64_t offset, std::span<const uint8_t> bytes,
                          Where where) {
  bool done_now = false;
  {
    MutexLock lock(mu_);
    if (cancelled_) return;
    if (bytes.empty()) {
      done_.push_back(token);
      done_now = true;
    } else if (tree_) {
      done_now = !SubmitTree(token, offset, bytes);
    } else if (where == Where::kHereIfSmall && bytes.size() <= kInlineDigestBytes &&
               !lane_running_ && lane_queue_.empty()) {
      // A ring slot's copy, next in order: digested here, on the connection's thread, which
      // takes it from TakeDone in this same pass. A pool job would cost two thread wake-ups
      // (the pool's and the connection's) for well under a microsecond of hashing. Windows
      // of a large delivery stay on the pool, where they digest side by side.
      reads_started_.fetch_add(1);
      lane_->Update(bytes);
      reads_finished_.fetch_add(1);
      done_.push_back(token);
    } else {
      pieces_left_[token] = 1;
      Enqueue(Piece{token, bytes});
    }
  }
  if (done_now && wake_) wake_();
}

// Each whole leaf in the range is a job of its own; a leaf the range holds only part of
// (it spans windows) goes through the lane, in order, with the other parts of that leaf.
bool DigestStream::SubmitTree(uint64_t token, uint64_t offset, std::span<const uint8_t> bytes) {
  const uint64_t end = std::min(offset + bytes.size(), total_bytes_);  // nothing past the end
  uint32_t pieces = 0;
  for (uint64_t leaf = offset / kTreeLeafBytes; offset < end && leaf * kTreeLeafBytes < end;
       ++leaf) {
    const uint64_t leaf_begin = leaf * kTreeLeafBytes;
    const uint64_t leaf_end = std::min(leaf_begin + kTreeLeafBytes, total_bytes_);
    const uint64_t from = std::max(offset, leaf_begin);
    const uint64_t to = std::min(end, leaf_end);
    Piece piece{token, bytes.subspan(from - offset, to - from), leaf, from == leaf_begin,
                to == leaf_end};
    ++pieces;
    if (piece.opens_leaf && piece.closes_leaf) {
      pool_.Post([self = shared_from_this(), piece] { self->RunLeaf(piece); });
    } else {
      Enqueue(piece);
    }
  }
  if (pieces == 0) {
    done_.push_back(token);
    return false;
  }
  pieces_left_[token] = pieces;
  return true;
}

void DigestStream::Enqueue(const Piece& piece) {
  lane_queue_.push_back(piece);
  if (lane_running_) return;
  lane_running_ = true;
  pool_.Post([self = shared_from_this()] { self->RunLane(); });
}

// The lane: one job at a time per stream, in submission order.
void DigestStream::RunLane() {
  for (;;) {
    Piece piece;
    {
      MutexLock lock(mu_);
      if (cancelled_ || lane_queue_.empty()) {
        lane_running_ = false;
        return;
      }
      piece = lane_queue_.front();
      lane_queue_.erase(lane_queue_.begin());
      ++reading_;
    }
    reads_started_.fetch_add(1);
    std::optional<std::vector<uint8_t>> leaf_digest;
    if (tree_ && piece.opens_leaf) lane_->Reset();
    lane_->Update(piece.bytes);
    if (tree_ && piece.closes_leaf) leaf_digest = lane_->Finish();
    EndRead(piece, std::move(leaf_digest));
  }
}

void DigestStream::RunLeaf(const Piece& piece) {
  if (!BeginRead()) return;
  auto digest = vocabulary::TreeLeafDigest(rule_, piece.bytes);
  EndRead(piece, digest.ok() ? std::move(digest).value() : std::vector<uint8_t>{});
}

bool DigestStream::BeginRead() {
  MutexLock lock(mu_);
  if (cancelled_) return false;
  ++reading_;
  reads_started_.fetch_add(1);
  return true;
}

void DigestStream::EndRead(const Piece& piece, std::optional<std::vector<uint8_t>> leaf_digest) {
  reads_finished_.fetch_add(1);
  bool token_done = false;
  {
    MutexLock lock(mu_);
    if (leaf_digest) FoldLeaf(piece.leaf, std::move(*leaf_digest));
    auto left = pieces_left_.find(piece.token);
    if (left != pieces_left_.end() && --left->second == 0) {
      pieces_left_.erase(left);
      done_.push_back(piece.token);
      token_done = true;
    }
    if (--reading_ == 0) no_reads_.notify_all();
  }
  if (token_done && wake_) wake_();
}

// The root takes leaf digests in leaf order; one that finished early waits here.
void DigestStream::FoldLeaf(uint64_t leaf, std::vector<uint8_t> digest) {
  if (digest.empty()) failed_ = true;
  early_leaves_[leaf] = std::move(digest);
  for (auto it = early_leaves_.find(next_leaf_); it != early_leaves_.end();
       it = early_leaves_.find(next_leaf_)) {
    root_->Update(it->second);
    early_leaves_.erase(it);
    ++next_leaf_;
  }
}

std::vector<uint64_t> DigestStream::TakeDone() {
  MutexLock lock(mu_);
  std::vector<uint64_t> done;
  done.swap(done_);
  return done;
}

bool DigestStream::idle() const {
  MutexLock lock(mu_);
  return pieces_left_.empty() && reading_ == 0;
}

std::vector<uint8_t> DigestStream::Finish() {
  MutexLock lock(mu_);
  if (cancelled_ || !pieces_left_.empty()) return {};
  if (!tree_) return lane_->Finish();
  if (failed_ || next_leaf_ != vocabulary::TreeLeafCount(total_bytes_)) return {};
  return root_->Finish();
}

void DigestStream::Cancel() {
  MutexLock lock(mu_);
  cancelled_ = true;
  lane_queue_.clear();
  lock.Wait(no_reads_, [this]() REQUIRES(mu_) { return reading_ == 0; });
}

}  // namespace writ::receiver
