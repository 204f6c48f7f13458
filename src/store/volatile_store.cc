#include "store/volatile_store.h"

#include <algorithm>
#include <cerrno>

namespace writ::store {

class VolatileWriter : public PayloadWriter {
 public:
  VolatileWriter(VolatileStore& store, DeliveryMeta meta, int fd)
      : store_(store), meta_(std::move(meta)), fd_(fd) {}
  ~VolatileWriter() override {
    if (map_ != nullptr) (void)store_.env_->Unmap(map_, meta_.bytes);
    if (fd_ >= 0) {
      (void)store_.env_->Close(fd_);
      store_.Release(meta_.bytes);
    }
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
    Status s = store_.env_->WriteAt(fd_, bytes, offset);
    if (!s.ok()) return s.Annotate("volatile store: write");
    return Status::Ok();
  }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    return store_.ReadFd(fd_, meta_.id, meta_.bytes, offset, out);
  }

  // A memory file is mapped once, whole; each placement allocates its range first, so a
  // store out of memory refuses the window instead of a page fault failing later.
  Result<uint8_t*> Placement(uint64_t offset, uint64_t length) override {
    // Small deliveries are copied: four syscalls of mapping cost more than copying them.
    if (!store_.dir_.empty() || meta_.bytes < kPlacementMinBytes) return nullptr;
    if (offset > meta_.bytes || length > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: placement past the delivery's end");
    }
    if (map_ == nullptr) {
      Status sized = store_.env_->Truncate(fd_, meta_.bytes);
      if (!sized.ok()) return sized.Annotate("volatile store: sizing the memory of " + meta_.id);
      auto map = store_.env_->MapShared(fd_, meta_.bytes);
      if (!map.ok())
        return map.status().Annotate("volatile store: mapping the memory of " + meta_.id);
      map_ = *map;
    }
    WRIT_RETURN_IF_ERROR(AllocateThrough(offset + length));
    // Mapped in bulk now rather than faulted in page by page as the transport writes.
    Status populated = store_.env_->Populate(map_ + offset, length);
    if (!populated.ok())
      return populated.Annotate("volatile store: mapping memory for " + meta_.id);
    return map_ + offset;
  }

  Result<RetentionEvidence> Commit(const std::vector<std::string>& receipts) override {
    VolatileStore::Entry entry;
    entry.delivery.meta = meta_;
    entry.delivery.retention = RetentionClass::kVolatile;
    entry.delivery.receipts = receipts;
    entry.fd = fd_;
    WRIT_RETURN_IF_ERROR(store_.Insert(std::move(entry)));
    fd_ = -1;  // the store owns it now
    RetentionEvidence ev;
    ev.retention = RetentionClass::kVolatile;
    ev.acknowledged_point =
        store_.dir_.empty()
            ? std::string(placed_ > 0 ? "bytes placed by the transport directly into"
                                      : "bytes written (pwrite) to") +
                  " an anonymous memory file (memfd) held open by the receiver process; index "
                  "entry in the process's memory"
            : "bytes written (pwrite, no sync) to an unlinked temporary file held open by the "
              "receiver process; index entry in the process's memory";
    ev.promise_after_failure =
        "none: the delivery is held only while this receiver process runs; after a crash or "
        "restart it is gone";
    ev.evidence =
        (placed_ > 0 ? std::to_string(placed_) + " bytes placed by RDMA writes into a " +
                           "registered mapping of the memory file, " +
                           std::to_string(meta_.bytes - placed_) + " bytes by pwrite, into "
                     : "pwrite of " + std::to_string(meta_.bytes) + " bytes into ") +
        (store_.dir_.empty() ? std::string("a memfd (host memory)")
                             : "an unlinked file in " + store_.dir_) +
        " returned success; no fsync was done";
    return ev;
  }

 private:
  // Memory for the delivery is allocated ahead of the writes, in large steps: a receiver
  // that cannot hold the bytes fails here, naming the delivery, rather than mid-write.
  Status AllocateThrough(uint64_t end) {
    if (end <= allocated_) return Status::Ok();
    const uint64_t step = std::max<uint64_t>(end - allocated_, kAllocationStep);
    const uint64_t length = std::min(step, meta_.bytes - allocated_);
    Status s = store_.env_->Allocate(fd_, allocated_, length, /*keep_size=*/false);
    if (!s.ok()) return s.Annotate("volatile store: allocating memory for " + meta_.id);
    allocated_ += length;
    return Status::Ok();
  }

  static constexpr uint64_t kAllocationStep = 64ull << 20;
  static constexpr uint64_t kPlacementMinBytes = 1ull << 20;
  VolatileStore& store_;
  DeliveryMeta meta_;
  int fd_;
  uint64_t allocated_ = 0;
  uint8_t* map_ = nullptr;  // the whole memory file, once a placement was asked for
  uint64_t placed_ = 0;     // bytes the transport placed directly
};

Result<std::unique_ptr<VolatileStore>> VolatileStore::Open(std::string scratch_dir,
                                                           uint64_t capacity, Env* env) {
  if (env == nullptr) env = Env::Default();
  if (scratch_dir.empty()) {
    return std::unique_ptr<VolatileStore>(new VolatileStore(std::move(scratch_dir), capacity, env));
  }
  auto info = env->Stat(scratch_dir);
  if (!info.ok() || !info->is_dir) {
    return Status::Io("volatile store: " + scratch_dir + " is not a directory",
                      info.ok() ? ENOTDIR : info.status().sys_errno());
  }
  return std::unique_ptr<VolatileStore>(new VolatileStore(std::move(scratch_dir), capacity, env));
}

VolatileStore::~VolatileStore() {
  for (auto& [id, entry] : entries_) (void)env_->Close(entry.fd);
}

void VolatileStore::Release(uint64_t bytes) {
  std::lock_guard lock(mu_);
  reserved_ -= bytes;
}

Status VolatileStore::Insert(Entry entry) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = entries_.emplace(entry.delivery.meta.id, entry);
  if (!inserted) {
    return Status::Refused("conflicting id: " + entry.delivery.meta.id + " is already retained");
  }
  return Status::Ok();
}

Result<std::optional<RetainedDelivery>> VolatileStore::Lookup(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::optional<RetainedDelivery>();
  return std::optional<RetainedDelivery>(it->second.delivery);
}

Result<std::unique_ptr<PayloadWriter>> VolatileStore::Begin(const DeliveryMeta& meta,
                                                            RetentionClass retention) {
  if (!Offers(retention)) {
    return Status::Retention("this receiver offers only volatile retention (start it with --data)");
  }
  {
    std::lock_guard lock(mu_);
    if (meta.bytes > capacity_ - reserved_) {
      return Status::Refused("space: delivery of " + std::to_string(meta.bytes) +
                             " bytes exceeds the volatile store's free capacity of " +
                             std::to_string(capacity_ - reserved_) + " bytes");
    }
    reserved_ += meta.bytes;
  }
  auto fd = dir_.empty() ? env_->OpenMemory("writ-volatile") : env_->OpenUnlinked(dir_);
  if (!fd.ok()) {
    Release(meta.bytes);
    return fd.status().Annotate(dir_.empty()
                                    ? "volatile store: cannot create a memory file"
                                    : "volatile store: cannot create a temporary file in " + dir_);
  }
  return std::unique_ptr<PayloadWriter>(new VolatileWriter(*this, meta, *fd));
}

Status VolatileStore::AppendReceipt(const std::string& id, const std::string& receipt_json) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
  it->second.delivery.receipts.push_back(receipt_json);
  return Status::Ok();
}

Status VolatileStore::Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) {
  int fd = -1;
  uint64_t bytes = 0;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("no retained delivery " + id);
    fd = it->second.fd;
    bytes = it->second.delivery.meta.bytes;
  }
  return ReadFd(fd, id, bytes, offset, out);
}

Status VolatileStore::ReadFd(int fd, const std::string& id, uint64_t bytes, uint64_t offset,
                             std::span<uint8_t> out) {
  if (offset > bytes || out.size() > bytes - offset) {
    return Status::InvalidArgument("read past the end of delivery " + id);
  }
  Status s = env_->ReadAt(fd, out, offset);
  if (!s.ok()) return s.Annotate("volatile store: read of " + id);
  return Status::Ok();
}

}  // namespace writ::store
