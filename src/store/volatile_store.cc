#include "store/volatile_store.h"

#include "common/unlinked_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace writ::store {

class VolatileWriter : public PayloadWriter {
 public:
  VolatileWriter(VolatileStore& store, DeliveryMeta meta, int fd)
      : store_(store), meta_(std::move(meta)), fd_(fd) {}
  ~VolatileWriter() override {
    if (fd_ >= 0) {
      close(fd_);
      store_.Release(meta_.bytes);
    }
  }

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    if (offset > meta_.bytes || bytes.size() > meta_.bytes - offset) {
      return Status::InvalidArgument("volatile store: write past the delivery's end");
    }
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Io(std::string("volatile store: write: ") + std::strerror(errno), errno);
      }
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    return store_.ReadFd(fd_, meta_.id, meta_.bytes, offset, out);
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
        "bytes written (pwrite, no sync) to an unlinked temporary file held open by the receiver "
        "process; index entry in the process's memory";
    ev.promise_after_failure =
        "none: the delivery is held only while this receiver process runs; after a crash or "
        "restart it is gone";
    ev.evidence = "pwrite of " + std::to_string(meta_.bytes) + " bytes into an unlinked file in " +
                  store_.dir_ + " returned success; no fsync was done";
    return ev;
  }

 private:
  VolatileStore& store_;
  DeliveryMeta meta_;
  int fd_;
};

Result<std::unique_ptr<VolatileStore>> VolatileStore::Open(std::string scratch_dir,
                                                           uint64_t capacity) {
  struct stat st{};
  if (stat(scratch_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::Io("volatile store: " + scratch_dir + " is not a directory", errno);
  }
  return std::unique_ptr<VolatileStore>(new VolatileStore(std::move(scratch_dir), capacity));
}

VolatileStore::~VolatileStore() {
  for (auto& [id, entry] : entries_) close(entry.fd);
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
  int fd = OpenUnlinkedFile(dir_);
  if (fd < 0) {
    const int err = errno;
    Release(meta.bytes);
    return Status::Io("volatile store: cannot create a temporary file in " + dir_ + ": " +
                          std::strerror(err),
                      err);
  }
  return std::unique_ptr<PayloadWriter>(new VolatileWriter(*this, meta, fd));
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
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Io("volatile store: read of " + id + " failed", errno);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace writ::store
