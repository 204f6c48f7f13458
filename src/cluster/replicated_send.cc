#include "cluster/replicated_send.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <set>
#include <span>
#include <thread>

#include "cluster/placed_targets.h"
#include "common/mutex.h"
#include "common/thread.h"
#include "vocabulary/digest.h"

namespace writ::cluster {
namespace {

// The source file mapped once for the whole replicated send: digested from it (unless the
// digest is given) and written from it by every replica, so that the K sessions share one
// read of the page cache, its pages faulted in once, instead of each staging its own copy.
class MappedSource {
 public:
  static Result<std::unique_ptr<MappedSource>> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::InvalidArgument("cannot open " + path);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status::InvalidArgument(path + ": replicated:K sends a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return Status::Io("cannot map " + path);
    return std::unique_ptr<MappedSource>(new MappedSource(static_cast<uint8_t*>(map), size));
  }
  ~MappedSource() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  MappedSource(const MappedSource&) = delete;
  MappedSource& operator=(const MappedSource&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedSource(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  size_t size_;
};

// One replica's delivery, written from the shared mapping through a session of its own.
DeliveryOutcome SendReplica(std::span<const uint8_t> bytes, const SendOptions& so) {
  auto session = Sender::Connect(SessionOptionsOf(so));
  if (!session.ok()) {
    DeliveryOutcome out;
    out.status = session.status();
    return out;
  }
  return (*session)->SendBytes(bytes, DeliveryOptionsOf(so));
}

const Receipt* RetainedReceiptOf(const DeliveryOutcome& o) {
  for (const Receipt& r : o.receipts)
    if (r.rung == ReceiptRung::kRetained) return &r;
  return nullptr;
}

// The shared state of the K workers.
class Replication {
 public:
  explicit Replication(const ReplicatedSendOptions& o) : o_(o), state_(o.order.size()) {
    MutexLock lock(mu_);
    for (const Receipt& r : o.existing) {
      if (!r.signature || !r.failure_domain) continue;
      ++counted_;
      keys_.insert(r.signature->public_key);
      domains_.insert(*r.failure_domain);
      if (!first_) first_ = r.delivery;
    }
  }

  void Worker(std::span<const uint8_t> bytes) {
    for (;;) {
      std::optional<size_t> next = Pick();
      if (!next) return;
      SendOptions so = o_.base;
      so.to = o_.order[*next].address;
      so.until = Rung::kValidated;
      so.retention = o_.replica_retention;
      so.progress = nullptr;
      ReplicaResult result{o_.order[*next], SendReplica(bytes, so), false, {}};
      Finish(*next, std::move(result));
    }
  }

  ReplicatedOutcome Outcome() {
    MutexLock lock(mu_);
    ReplicatedOutcome out;
    out.replicas = results_;
    std::vector<Receipt> members;
    for (const Receipt& r : o_.existing)
      if (r.signature && r.failure_domain) members.push_back(r);
    for (const ReplicaResult& r : results_)
      if (r.counted) members.push_back(*RetainedReceiptOf(r.outcome));
    if (members.size() >= o_.k) {
      members.resize(o_.k);
      out.certificate = receipt::MakeCertificate(std::move(members));
      return out;
    }
    out.status = Status::Retention(Shortfall(members.size()));
    return out;
  }

 private:
  enum class State { kUntried, kTrying, kDone };

  // The next untried receiver whose domain no counted or in-flight copy holds; waits while
  // a copy in flight may yet free one; nothing when K are counted or none is left.
  std::optional<size_t> Pick() {
    MutexLock lock(mu_);
    for (;;) {
      if (counted_ + trying_ >= o_.k) {
        if (counted_ >= o_.k || trying_ == 0) return std::nullopt;
        lock.Wait(changed_);
        continue;
      }
      bool any_untried = false;
      for (size_t i = 0; i < state_.size(); ++i) {
        if (state_[i] != State::kUntried) continue;
        any_untried = true;
        const std::string& d = o_.order[i].domain;
        if (!d.empty() && (domains_.count(d) != 0 || reserved_.count(d) != 0)) continue;
        state_[i] = State::kTrying;
        ++trying_;
        if (!d.empty()) reserved_.insert(d);
        return i;
      }
      if (!any_untried || trying_ == 0) return std::nullopt;
      lock.Wait(changed_);
    }
  }

  void Finish(size_t i, ReplicaResult result) {
    MutexLock lock(mu_);
    state_[i] = State::kDone;
    --trying_;
    reserved_.erase(result.target.domain);
    result.why_not = Judge(result);
    result.counted = result.why_not.empty();
    if (result.counted) {
      ++counted_;
      const Receipt& r = *RetainedReceiptOf(result.outcome);
      keys_.insert(r.signature->public_key);
      domains_.insert(*r.failure_domain);
      if (!first_) first_ = r.delivery;
    }
    results_.push_back(std::move(result));
    changed_.notify_all();
  }

  // Empty when `r` counts as one more copy; otherwise why not.
  std::string Judge(const ReplicaResult& r) REQUIRES(mu_) {
    if (!r.outcome.status.ok()) return r.outcome.status.message();
    const Receipt* retained = RetainedReceiptOf(r.outcome);
    if (retained == nullptr) return "no retained receipt";
    if (!retained->signature) return "its retained receipt is unsigned";
    if (Status s = VerifyReceipt(*retained, r.target.public_key); !s.ok())
      return "its retained receipt does not verify: " + s.message();
    if (!retained->failure_domain) return "its receipt signs no failure domain (serve --domain)";
    const std::string& domain = *retained->failure_domain;
    if (!r.target.domain.empty() && domain != r.target.domain)
      return "its receipt signs domain '" + domain + "', it registered '" + r.target.domain + "'";
    if (domains_.count(domain) != 0) return "domain '" + domain + "' already holds a copy";
    if (keys_.count(retained->signature->public_key) != 0)
      return "key " + retained->signature->key_id + " already holds a copy";
    if (first_ &&
        (first_->digest != retained->delivery.digest || first_->bytes != retained->delivery.bytes ||
         first_->id != retained->delivery.id))
      return "its receipt names another delivery";
    return "";
  }

  std::string Shortfall(size_t counted) REQUIRES(mu_) {
    std::string text = "replicated:" + std::to_string(o_.k) +
                       " not reached: " + std::to_string(counted) + " retained cop" +
                       (counted == 1 ? "y" : "ies") + " from distinct keys in distinct domains";
    if (!o_.existing.empty()) text += " (" + std::to_string(o_.existing.size()) + " already held)";
    for (const ReplicaResult& r : results_) {
      text += "; " + r.target.address + (r.counted ? ": retained" : ": " + r.why_not);
    }
    if (results_.empty()) text += "; no receiver to try";
    return text;
  }

  const ReplicatedSendOptions& o_;
  Mutex mu_;
  std::condition_variable changed_;
  std::vector<State> state_ GUARDED_BY(mu_);
  size_t trying_ GUARDED_BY(mu_) = 0;
  size_t counted_ GUARDED_BY(mu_) = 0;
  std::set<std::string> domains_ GUARDED_BY(mu_);   // of counted copies
  std::set<std::string> reserved_ GUARDED_BY(mu_);  // of copies in flight
  std::set<std::string> keys_ GUARDED_BY(mu_);
  std::optional<DeliveryRef> first_ GUARDED_BY(mu_);
  std::vector<ReplicaResult> results_ GUARDED_BY(mu_);
};

}  // namespace

ReplicatedOutcome SendReplicated(const std::string& path, const ReplicatedSendOptions& options) {
  ReplicatedOutcome failed;
  if (options.k == 0) {
    failed.status = Status::InvalidArgument("replicated:K: K must be at least 1");
    return failed;
  }
  ReplicatedSendOptions o = options;
  auto source = MappedSource::Open(path);
  if (!source.ok()) {
    failed.status = source.status();
    return failed;
  }
  const std::span<const uint8_t> bytes = (*source)->bytes();
  if (o.base.id.empty()) o.base.id = DeliveryIdOfFile(path, "");
  if (o.base.digest.empty()) {
    auto digest = vocabulary::DigestOf(o.base.rule, bytes);
    if (!digest.ok()) {
      failed.status = digest.status();
      return failed;
    }
    o.base.digest = std::move(digest).value();
  }
  Replication replication(o);
  std::vector<std::thread> workers(o.k);
  for (std::thread& w : workers) {
    Status started = StartThread(w, "a replica sender", [&] { replication.Worker(bytes); });
    if (!started.ok()) break;
  }
  for (std::thread& w : workers)
    if (w.joinable()) w.join();
  return replication.Outcome();
}

}  // namespace writ::cluster
