// The one seam every file-system call of the durable store goes through
// (LevelDB's / RocksDB's Env idea). Production uses Env::Default(), which makes
// the POSIX calls; tests derive from EnvWrapper and override only the calls
// they want to fail. Store code never calls open/pwrite/fsync/rename/... itself.
//
// SQLite does its own I/O through its unix VFS. The index installs a thin VFS
// shim that reports each write and sync of the index files to BeforeIndexIo()
// before SQLite performs it, so tests can fail those too, and so the store can
// record the index's sync calls as evidence (see index.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::store {

struct FileInfo {
  bool is_dir = false;
  bool is_symlink = false;  // only from Lstat
  bool is_regular = false;
  uint64_t size = 0;
  // Which file and which version of it: a write through the file system changes the times
  // (what a verified payload's stamp is checked against, durable_store.h).
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool SameVersion(const FileInfo& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns;
  }
};

// What statfs/statvfs know about the file system holding a path.
struct FsInfo {
  std::string type;         // "ext4", "xfs", "tmpfs", "fuse", ... or "unknown (0x...)"
  uint64_t type_magic = 0;  // statfs f_type
  uint64_t free_bytes = 0;  // available to unprivileged users (f_bavail * f_frsize)
};

// The index I/O a VFS shim reports (index.h).
enum class IndexIo { kWrite, kTruncate, kSync };

class Env {
 public:
  virtual ~Env() = default;
  // The POSIX implementation; lives for the whole process.
  static Env* Default();

  // open(2). Returns the descriptor.
  virtual Result<int> Open(const std::string& path, int flags, mode_t mode) = 0;
  virtual Status Close(int fd) = 0;
  // A read-write file with no name in `dir` (O_TMPFILE, else mkstemp + unlink).
  virtual Result<int> OpenUnlinked(const std::string& dir) = 0;
  // A read-write file that lives only in memory (memfd_create), named `name` in /proc.
  virtual Result<int> OpenMemory(const std::string& name) = 0;
  // fallocate(2) of [offset, offset + length): the blocks (or memory pages) exist before
  // anything is written, so a full disk shows up here and writes do not allocate page by
  // page. `keep_size` leaves the file's size alone. Unsupported by the file system: Ok.
  virtual Status Allocate(int fd, uint64_t offset, uint64_t length, bool keep_size) = 0;
  // Turns O_DIRECT on or off for an open file (fcntl F_SETFL): writes then go from the
  // caller's memory to the device, bypassing the page cache; they must be aligned.
  // Unsupported by the file system: an error (EINVAL), and the file stays as it was.
  virtual Status SetDirectIo(int fd, bool on) = 0;
  // ftruncate(2).
  virtual Status Truncate(int fd, uint64_t length) = 0;
  // A shared read-write mapping of the first `length` bytes of `fd` (mmap MAP_SHARED).
  virtual Result<uint8_t*> MapShared(int fd, uint64_t length) = 0;
  virtual Status Unmap(uint8_t* address, uint64_t length) = 0;
  // Address space for `length` bytes with no access and no memory behind it (mmap
  // PROT_NONE), to map files into side by side with MapSharedAt; Unmap releases it.
  virtual Result<uint8_t*> ReserveAddresses(uint64_t length) = 0;
  // A shared read-write mapping of the first `length` bytes of `fd` exactly at `address`
  // (MAP_FIXED), replacing what was there: a part of a ReserveAddresses range.
  virtual Status MapSharedAt(uint8_t* address, int fd, uint64_t length) = 0;
  // Moves the mapping [from, from + length) to `to` (mremap MREMAP_FIXED), page tables
  // and all, replacing what was there: mapped pages stay mapped, without a fault each.
  virtual Status MoveMapping(uint8_t* from, uint64_t length, uint8_t* to) = 0;
  // Maps the pages of [address, address + length) of a shared mapping writable now
  // (madvise MADV_POPULATE_WRITE), so what writes there later takes no page faults; memory
  // that cannot be had fails here. Kernels without it: Ok.
  virtual Status Populate(uint8_t* address, uint64_t length) = 0;
  // Private anonymous memory of `length` bytes (mmap MAP_PRIVATE | MAP_ANONYMOUS |
  // MAP_NORESERVE), its start a multiple of `align` (a power of two, at least a page): no
  // memory is behind it until Populate or a write. It asks for transparent huge pages
  // (MADV_HUGEPAGE: one first touch per 2 MiB, where a kernel without them gives plain
  // pages) and is left out of any child a fork makes (MADV_DONTFORK: no copy-on-write of it
  // in this process, and registered memory stays put). Unmap(address, length) releases it.
  virtual Result<uint8_t*> MapMemory(uint64_t length, uint64_t align) = 0;
  // Gives the memory behind [address, address + length) of a MapMemory range back (madvise
  // MADV_DONTNEED, page-aligned): it reads as zeros after.
  virtual Status DiscardMemory(uint8_t* address, uint64_t length) = 0;
  // Gives the memory or blocks of [offset, offset + length) of `fd` back (fallocate
  // PUNCH_HOLE, size kept): the range reads as zeros after, and any mapping of it faults in
  // fresh zero pages.
  virtual Status Discard(int fd, uint64_t offset, uint64_t length) = 0;
  // Starts writeback of the range (sync_file_range SYNC_FILE_RANGE_WRITE) without waiting:
  // a hint that overlaps the disk's work with what follows; it makes nothing durable.
  virtual Status StartWriteback(int fd, uint64_t offset, uint64_t length) = 0;
  // Writes all of `bytes` at `offset` (pwrite, retried on short writes and EINTR).
  virtual Status WriteAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) = 0;
  // Reads exactly out.size() bytes at `offset`; a short file is an error.
  virtual Status ReadAt(int fd, std::span<uint8_t> out, uint64_t offset) = 0;
  virtual Status Fdatasync(int fd) = 0;
  virtual Status Fsync(int fd) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // mkdir(2); an existing directory is not an error.
  virtual Status CreateDir(const std::string& path) = 0;
  // Opens the directory and fsyncs it, so entries created, renamed or removed in it are durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // Names in a directory, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // NotFound when the path does not exist.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Like Stat, but a symbolic link is described itself, not followed (lstat(2)).
  virtual Result<FileInfo> Lstat(const std::string& path) = 0;
  // Opens the directory `path` (not following a symlink) and takes an exclusive flock(2) on
  // it without waiting; the lock lasts while the returned descriptor is open. Busy (held by
  // another open file): an error with errno EWOULDBLOCK.
  virtual Result<int> LockDir(const std::string& path) = 0;
  virtual Result<FsInfo> StatFs(const std::string& path) = 0;

  // Called by the index's VFS shim before SQLite writes, truncates or syncs one of the
  // index files (`path` is the file). An error is returned to SQLite instead of doing it.
  virtual Status BeforeIndexIo(IndexIo op, const std::string& path);
};

// Forwards every call to `target`; derive and override what you want to change.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    return target_->Open(path, flags, mode);
  }
  Status Close(int fd) override { return target_->Close(fd); }
  Result<int> OpenUnlinked(const std::string& dir) override { return target_->OpenUnlinked(dir); }
  Result<int> OpenMemory(const std::string& name) override { return target_->OpenMemory(name); }
  Status Allocate(int fd, uint64_t offset, uint64_t length, bool keep_size) override {
    return target_->Allocate(fd, offset, length, keep_size);
  }
  Status StartWriteback(int fd, uint64_t offset, uint64_t length) override {
    return target_->StartWriteback(fd, offset, length);
  }
  Status SetDirectIo(int fd, bool on) override { return target_->SetDirectIo(fd, on); }
  Status Truncate(int fd, uint64_t length) override { return target_->Truncate(fd, length); }
  Result<uint8_t*> MapShared(int fd, uint64_t length) override {
    return target_->MapShared(fd, length);
  }
  Status Unmap(uint8_t* address, uint64_t length) override {
    return target_->Unmap(address, length);
  }
  Result<uint8_t*> ReserveAddresses(uint64_t length) override {
    return target_->ReserveAddresses(length);
  }
  Status MapSharedAt(uint8_t* address, int fd, uint64_t length) override {
    return target_->MapSharedAt(address, fd, length);
  }
  Status MoveMapping(uint8_t* from, uint64_t length, uint8_t* to) override {
    return target_->MoveMapping(from, length, to);
  }
  Status Populate(uint8_t* address, uint64_t length) override {
    return target_->Populate(address, length);
  }
  Result<uint8_t*> MapMemory(uint64_t length, uint64_t align) override {
    return target_->MapMemory(length, align);
  }
  Status DiscardMemory(uint8_t* address, uint64_t length) override {
    return target_->DiscardMemory(address, length);
  }
  Status Discard(int fd, uint64_t offset, uint64_t length) override {
    return target_->Discard(fd, offset, length);
  }
  Status WriteAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) override {
    return target_->WriteAt(fd, bytes, offset);
  }
  Status ReadAt(int fd, std::span<uint8_t> out, uint64_t offset) override {
    return target_->ReadAt(fd, out, offset);
  }
  Status Fdatasync(int fd) override { return target_->Fdatasync(fd); }
  Status Fsync(int fd) override { return target_->Fsync(fd); }
  Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  Status Remove(const std::string& path) override { return target_->Remove(path); }
  Status CreateDir(const std::string& path) override { return target_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  Result<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  Result<FileInfo> Lstat(const std::string& path) override { return target_->Lstat(path); }
  Result<int> LockDir(const std::string& path) override { return target_->LockDir(path); }
  Result<FsInfo> StatFs(const std::string& path) override { return target_->StatFs(path); }
  Status BeforeIndexIo(IndexIo op, const std::string& path) override {
    return target_->BeforeIndexIo(op, path);
  }

 private:
  Env* target_;
};

// "EIO", "ENOSPC", ... for messages and evidence; "errno N" for others.
std::string ErrnoName(int err);
// A failed call as a Status::Io carrying its errno: "fdatasync(p/1.tmp): EIO (Input/output error)".
Status SysError(const std::string& call, int err);

}  // namespace writ::store
