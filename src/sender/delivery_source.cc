#include "sender/delivery_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include "common/io_buffer.h"
#include "common/mutex.h"
#include "common/unlinked_file.h"
#include "sender/mapping_guard.h"
#include "vocabulary/digest.h"

namespace writ::sender {
namespace {

constexpr size_t kBlock = 4 << 20;
// Stays in the L2 cache between the copy and the hash.
constexpr size_t kDigestBlock = 256 << 10;
// The pipelined pass hands blocks between threads: larger ones, to amortise the hand-off.
constexpr size_t kPipelinedBlock = 2 << 20;

Status IoError(const std::string& what) {
  return Status::Io(what + ": " + std::strerror(errno), errno);
}

FileKey KeyOf(const struct stat& st) {
  constexpr int64_t kNs = 1000000000;
  return FileKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                 static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec * kNs + st.st_mtim.tv_nsec,
                 st.st_ctim.tv_sec * kNs + st.st_ctim.tv_nsec};
}

}  // namespace

Result<DeliverySource> DeliverySource::Open(const std::string& path) {
  if (path == "-") {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp && *tmp ? tmp : "/tmp";
    int fd = OpenUnlinkedFile(dir);
    if (fd < 0) return IoError("cannot spool standard input in " + dir);
    IoBuffer block(kBlock);
    uint64_t total = 0;
    for (;;) {
      const ssize_t n = read(STDIN_FILENO, block.data(), block.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        close(fd);
        return IoError("reading standard input");
      }
      if (n == 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w =
            pwrite(fd, block.data() + done, n - done, static_cast<off_t>(total + done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          close(fd);
          return IoError("spooling standard input");
        }
        done += w;
      }
      total += static_cast<uint64_t>(n);
    }
    return DeliverySource(fd, total, "stdin", false);
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + " is not a regular file (use - for standard input)");
  }
  const size_t slash = path.find_last_of('/');
  DeliverySource source(fd, static_cast<uint64_t>(st.st_size),
                        slash == std::string::npos ? path : path.substr(slash + 1), true);
  source.file_key_ = KeyOf(st);
  return source;
}

Result<FileKey> DeliverySource::CurrentKey() const {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return IoError("fstat of the delivery's file");
  return KeyOf(st);
}

Status DeliverySource::Fold(vocabulary::Digester& digester, uint64_t offset, uint64_t length) {
  if (regions_) return regions_->Fold(digester, offset, length);
  if (fd_ < 0) {  // caller memory
    if (offset > mapped_.size() || length > mapped_.size() - offset) {
      return Status::InvalidArgument("digest past the end of the delivery");
    }
    digester.Update(mapped_.subspan(offset, length));
    return Status::Ok();
  }
  if (owns_mapping_ && MappingGuardReady()) {  // the transport's source: no second copy
    if (offset > size_ || length > size_ - offset) {
      return Status::InvalidArgument("digest past the end of the delivery");
    }
    if (!GuardedUpdate(digester, mapped_.subspan(offset, length))) {
      return Status::Io("the delivery's file shrank while it was being sent (bytes " +
                        std::to_string(offset) + " to " + std::to_string(offset + length) +
                        " are no longer all in it)");
    }
    return Status::Ok();
  }
  if (fold_block_.size() == 0 && length > 0) fold_block_ = IoBuffer(kDigestBlock);
  for (uint64_t done = 0; done < length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kDigestBlock, length - done));
    const std::span<uint8_t> block(fold_block_.data(), n);
    WRIT_RETURN_IF_ERROR(Read(offset + done, block));
    digester.Update(std::span<const uint8_t>(block));
    done += n;
  }
  return Status::Ok();
}

DeliverySource DeliverySource::FromBytes(std::span<const uint8_t> bytes, std::string name) {
  DeliverySource source(-1, bytes.size(), std::move(name), false);
  source.mapped_ = bytes;
  return source;
}

DeliverySource DeliverySource::FromRegions(RegionList regions, std::string name) {
  DeliverySource source(-1, regions.size(), std::move(name), false);
  source.regions_ = std::make_shared<const RegionList>(std::move(regions));
  return source;
}

const std::vector<uint64_t>& DeliverySource::region_lengths() const {
  static const std::vector<uint64_t> kNone;
  return regions_ ? regions_->lengths() : kNone;
}

DeliverySource::DeliverySource(DeliverySource&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      name_(std::move(other.name_)),
      regular_file_(other.regular_file_),
      owns_mapping_(std::exchange(other.owns_mapping_, false)),
      mapped_(std::exchange(other.mapped_, {})),
      file_key_(other.file_key_),
      fold_block_(std::move(other.fold_block_)),
      regions_(std::move(other.regions_)) {}

DeliverySource::~DeliverySource() {
  if (owns_mapping_) munmap(const_cast<uint8_t*>(mapped_.data()), mapped_.size());
  if (fd_ >= 0) close(fd_);
}

Status DeliverySource::Map() {
  if (!mapped_.empty() || size_ == 0) return Status::Ok();
  if (!mappable()) return Status::Unsupported("only a regular file can be mapped");
  void* p = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return IoError("mmap of the delivery's file");
  (void)madvise(p, size_, MADV_SEQUENTIAL);
  (void)madvise(p, size_, MADV_WILLNEED);
  mapped_ = std::span(static_cast<const uint8_t*>(p), size_);
  owns_mapping_ = true;
  return Status::Ok();
}

void DeliverySource::Release(uint64_t offset, uint64_t length) const {
  if (!owns_mapping_ || offset >= mapped_.size()) return;
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min<uint64_t>(offset + length, mapped_.size());
  const uint64_t first = (offset + page - 1) / page * page;
  // The mapping's last page may be partial: whole pages only, except at the very end.
  const uint64_t last = end == mapped_.size() ? end : end / page * page;
  if (last <= first) return;
  (void)madvise(const_cast<uint8_t*>(mapped_.data()) + first, last - first, MADV_DONTNEED);
}

Status DeliverySource::Read(uint64_t offset, std::span<uint8_t> out) const {
  if (regions_) return regions_->Read(offset, out);
  if (fd_ < 0) {  // caller memory
    if (offset > mapped_.size() || out.size() > mapped_.size() - offset) {
      return Status::InvalidArgument("read past the end of the delivery");
    }
    std::memcpy(out.data(), mapped_.data() + offset, out.size());
    return Status::Ok();
  }
  // A file is read with pread even when it is mapped: reading the mapping of a file that
  // shrank meanwhile would be SIGBUS, pread says so instead.
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError("reading the delivery");
    if (n == 0) return Status::Io("the delivery's file shrank while it was being sent");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> DeliverySource::Digest(Rule rule) const {
  WRIT_ASSIGN_OR_RETURN(auto digester, vocabulary::Digester::Create(rule));
  if (regions_) {
    WRIT_RETURN_IF_ERROR(regions_->Fold(*digester, 0, size_));
    return digester->Finish();
  }
  if (fd_ < 0) {
    digester->Update(mapped_);
    return digester->Finish();
  }
  // Through pread into cache-sized blocks (never through the mapping: see Read). From a
  // few blocks on, a second thread reads the next block while this one hashes the last.
  // (A delivery digests with Fold as it writes; this whole-file pass is the reference.)
  if (size_ <= 4 * kPipelinedBlock) {
    WRIT_RETURN_IF_ERROR(DigestSerial(*digester));
  } else {
    WRIT_RETURN_IF_ERROR(DigestPipelined(*digester));
  }
  return digester->Finish();
}

Status DeliverySource::DigestSerial(vocabulary::Digester& digester) const {
  IoBuffer block(
      static_cast<size_t>(std::min<uint64_t>(kDigestBlock, std::max<uint64_t>(size_, 1))));
  for (uint64_t offset = 0; offset < size_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), size_ - offset));
    WRIT_RETURN_IF_ERROR(Read(offset, std::span(block.data(), n)));
    digester.Update(std::span<const uint8_t>(block.data(), n));
    offset += n;
  }
  return Status::Ok();
}

Status DeliverySource::DigestPipelined(vocabulary::Digester& digester) const {
  struct Slot {
    IoBuffer bytes{kPipelinedBlock};
    size_t length = 0;
    bool full = false;
  };
  Slot slots[2];
  Mutex mu;
  std::condition_variable cv;
  Status read_status;
  bool stop = false;
  const uint64_t blocks = (size_ + kPipelinedBlock - 1) / kPipelinedBlock;
  auto reader = [&] {
    for (uint64_t i = 0; i < blocks; ++i) {
      Slot& slot = slots[i % 2];
      {
        MutexLock lock(mu);
        lock.Wait(cv, [&] { return !slot.full || stop; });
        if (stop) return;
      }
      const uint64_t offset = i * kPipelinedBlock;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kPipelinedBlock, size_ - offset));
      Status s = Read(offset, std::span(slot.bytes.data(), n));
      MutexLock lock(mu);
      if (!s.ok()) {
        read_status = s;
        stop = true;
        cv.notify_all();
        return;
      }
      slot.length = n;
      slot.full = true;
      cv.notify_all();
    }
  };
  std::thread thread;
  try {
    thread = std::thread(reader);
  } catch (const std::system_error&) {
    return DigestSerial(digester);  // no thread to be had
  }
  Status status;
  for (uint64_t i = 0; i < blocks; ++i) {
    Slot& slot = slots[i % 2];
    {
      MutexLock lock(mu);
      lock.Wait(cv, [&] { return slot.full || stop; });
      if (!slot.full) {
        status = read_status;
        break;
      }
    }
    digester.Update(std::span<const uint8_t>(slot.bytes.data(), slot.length));
    MutexLock lock(mu);
    slot.full = false;
    cv.notify_all();
  }
  if (thread.joinable()) thread.join();
  return status;
}

}  // namespace writ::sender
