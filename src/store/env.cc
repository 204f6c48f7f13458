#include "store/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/unlinked_file.h"

namespace writ::store {
namespace {

struct FsName {
  uint64_t magic;
  const char* name;
};

// statfs(2) f_type values (linux/magic.h) of the file systems a data directory is likely on.
constexpr FsName kFsNames[] = {
    {0xEF53, "ext4"},      {0x58465342, "xfs"}, {0x9123683E, "btrfs"},    {0x01021994, "tmpfs"},
    {0x65735546, "fuse"},  {0x6969, "nfs"},     {0x2FC12FC1, "zfs"},      {0x794C7630, "overlayfs"},
    {0xF2F52010, "f2fs"},  {0x3153464A, "jfs"}, {0x52654973, "reiserfs"}, {0xFF534D42, "cifs"},
    {0x858458F6, "ramfs"}, {0x4D44, "vfat"},    {0x5346544E, "ntfs"},     {0xCA451A4E, "bcachefs"},
    {0x9FA0, "proc"},
};

class PosixEnv : public Env {
 public:
  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    for (;;) {
      const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
      if (fd >= 0) return fd;
      if (errno != EINTR) return SysError("open(" + path + ")", errno);
    }
  }

  Result<int> OpenUnlinked(const std::string& dir) override {
    const int fd = OpenUnlinkedFile(dir);
    if (fd < 0) return SysError("an unlinked file in " + dir, errno);
    return fd;
  }

  Result<int> OpenMemory(const std::string& name) override {
    const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0) return SysError("memfd_create(" + name + ")", errno);
    return fd;
  }

  Status Allocate(int fd, uint64_t offset, uint64_t length, bool keep_size) override {
    for (;;) {
      if (::fallocate(fd, keep_size ? FALLOC_FL_KEEP_SIZE : 0, static_cast<off_t>(offset),
                      static_cast<off_t>(length)) == 0) {
        return Status::Ok();
      }
      if (errno == EINTR) continue;
      if (errno == EOPNOTSUPP || errno == ENOSYS) return Status::Ok();  // only a hint there
      return SysError("fallocate", errno);
    }
  }

  Status SetDirectIo(int fd, bool on) override {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return SysError("fcntl(F_GETFL)", errno);
    const int wanted = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    if (wanted != flags && ::fcntl(fd, F_SETFL, wanted) != 0) {
      return SysError(on ? "fcntl(F_SETFL, O_DIRECT)" : "fcntl(F_SETFL, ~O_DIRECT)", errno);
    }
    return Status::Ok();
  }

  Status Truncate(int fd, uint64_t length) override {
    for (;;) {
      if (::ftruncate(fd, static_cast<off_t>(length)) == 0) return Status::Ok();
      if (errno != EINTR) return SysError("ftruncate", errno);
    }
  }

  Result<uint8_t*> MapShared(int fd, uint64_t length) override {
    void* map = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return SysError("mmap", errno);
    return static_cast<uint8_t*>(map);
  }

  Status Unmap(uint8_t* address, uint64_t length) override {
    if (::munmap(address, length) != 0) return SysError("munmap", errno);
    return Status::Ok();
  }

  Result<uint8_t*> ReserveAddresses(uint64_t length) override {
    void* map =
        ::mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return SysError("mmap (address space)", errno);
    return static_cast<uint8_t*>(map);
  }

  Status MapSharedAt(uint8_t* address, int fd, uint64_t length) override {
    void* map = ::mmap(address, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (map == MAP_FAILED) return SysError("mmap (fixed)", errno);
    return Status::Ok();
  }

  Status MoveMapping(uint8_t* from, uint64_t length, uint8_t* to) override {
    void* moved = ::mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (moved == MAP_FAILED) return SysError("mremap", errno);
    return Status::Ok();
  }

  Status Populate(uint8_t* address, uint64_t length) override {
    // madvise wants a page-aligned start.
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t skew = reinterpret_cast<uintptr_t>(address) % page;
    for (;;) {
      if (::madvise(address - skew, length + skew, MADV_POPULATE_WRITE) == 0) return Status::Ok();
      if (errno == EINTR) continue;
      if (errno == EINVAL) return Status::Ok();  // a kernel before 5.14
      return SysError("madvise(MADV_POPULATE_WRITE)", errno);
    }
  }

  Result<uint8_t*> MapMemory(uint64_t length, uint64_t align) override {
    // Over-mapped by `align` and trimmed, so that its start is aligned.
    const uint64_t mapped = length + align;
    void* map = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return SysError("mmap (anonymous memory)", errno);
    auto* start = static_cast<uint8_t*>(map);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(start) + align - 1) /
                                               align * align);
    if (aligned > start) (void)::munmap(start, static_cast<size_t>(aligned - start));
    const uint64_t tail = static_cast<uint64_t>(start + mapped - (aligned + length));
    if (tail > 0) (void)::munmap(aligned + length, tail);
    // Advice only: a kernel without transparent huge pages gives plain pages.
    (void)::madvise(aligned, length, MADV_HUGEPAGE);
    if (::madvise(aligned, length, MADV_DONTFORK) != 0) {
      const int error = errno;
      (void)::munmap(aligned, length);
      return SysError("madvise(MADV_DONTFORK)", error);
    }
    return aligned;
  }

  Status DiscardMemory(uint8_t* address, uint64_t length) override {
    if (::madvise(address, length, MADV_DONTNEED) != 0) {
      return SysError("madvise(MADV_DONTNEED)", errno);
    }
    return Status::Ok();
  }

  Status Discard(int fd, uint64_t offset, uint64_t length) override {
    for (;;) {
      if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                      static_cast<off_t>(length)) == 0) {
        return Status::Ok();
      }
      if (errno != EINTR) return SysError("fallocate(PUNCH_HOLE)", errno);
    }
  }

  Status StartWriteback(int fd, uint64_t offset, uint64_t length) override {
    if (::sync_file_range(fd, static_cast<off_t>(offset), static_cast<off_t>(length),
                          SYNC_FILE_RANGE_WRITE) == 0) {
      return Status::Ok();
    }
    return SysError("sync_file_range", errno);
  }

  Status Close(int fd) override {
    // Linux closes the descriptor even when close reports an error; never retry.
    if (::close(fd) != 0 && errno != EINTR) return SysError("close", errno);
    return Status::Ok();
  }

  Status WriteAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) override {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysError("pwrite", errno);
      }
      if (n == 0) return SysError("pwrite", EIO);
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status ReadAt(int fd, std::span<uint8_t> out, uint64_t offset) override {
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n =
          ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysError("pread", errno);
      }
      if (n == 0) {
        return Status::Io("pread: the file ends at " + std::to_string(offset + done) +
                          ", before the " + std::to_string(out.size()) + " bytes asked at " +
                          std::to_string(offset));
      }
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Fdatasync(int fd) override {
    if (::fdatasync(fd) != 0) return SysError("fdatasync", errno);
    return Status::Ok();
  }

  Status Fsync(int fd) override {
    if (::fsync(fd) != 0) return SysError("fsync", errno);
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return SysError("rename(" + from + ", " + to + ")", errno);
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return SysError("unlink(" + path + ")", errno);
    return Status::Ok();
  }

  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) {
      const int err = errno;
      struct stat st {};
      if (err == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return Status::Ok();
      return SysError("mkdir(" + path + ")", err);
    }
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return SysError("open(" + path + ")", errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return SysError("fsync(" + path + "/)", err);
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return SysError("opendir(" + path + ")", errno);
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
      errno = 0;
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) return SysError("readdir(" + path + ")", err);
    return names;
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return SysError("stat(" + path + ")", errno);
    }
    return InfoOf(st);
  }

  Result<FileInfo> Lstat(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return SysError("lstat(" + path + ")", errno);
    }
    return InfoOf(st);
  }

  Result<int> LockDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return SysError("open(" + path + ")", errno);
    for (;;) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return SysError("flock(" + path + ")", err);
    }
  }

  static FileInfo InfoOf(const struct stat& st) {
    FileInfo info;
    info.is_dir = S_ISDIR(st.st_mode);
    info.is_symlink = S_ISLNK(st.st_mode);
    info.is_regular = S_ISREG(st.st_mode);
    info.size = static_cast<uint64_t>(st.st_size);
    info.device = static_cast<uint64_t>(st.st_dev);
    info.inode = static_cast<uint64_t>(st.st_ino);
    info.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    info.ctime_ns = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    return info;
  }

  Result<FsInfo> StatFs(const std::string& path) override {
    struct statfs fs {};
    if (::statfs(path.c_str(), &fs) != 0) return SysError("statfs(" + path + ")", errno);
    struct statvfs vfs {};
    if (::statvfs(path.c_str(), &vfs) != 0) return SysError("statvfs(" + path + ")", errno);
    FsInfo info;
    info.type_magic = static_cast<uint64_t>(static_cast<uint32_t>(fs.f_type));
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(info.type_magic));
    info.type = std::string("unknown (statfs f_type ") + hex + ")";
    for (const auto& known : kFsNames) {
      if (known.magic == info.type_magic)
        info.type = std::string(known.name) + " (statfs f_type " + hex + ")";
    }
    info.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
    return info;
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv env;
  return &env;
}

Status Env::BeforeIndexIo(IndexIo, const std::string&) { return Status::Ok(); }

std::string ErrnoName(int err) {
  switch (err) {
    case 0: return "0";
    case EIO: return "EIO";
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EROFS: return "EROFS";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EINVAL: return "EINVAL";
    case EBADF: return "EBADF";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ENOTCONN: return "ENOTCONN";
    case EFBIG: return "EFBIG";
    case ENOTEMPTY: return "ENOTEMPTY";
    default: return "errno " + std::to_string(err);
  }
}

Status SysError(const std::string& call, int err) {
  return Status::Io(call + ": " + ErrnoName(err) + " (" + std::strerror(err) + ")", err);
}

}  // namespace writ::store
