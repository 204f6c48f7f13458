#include "receiver/out_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace writ::receiver {
namespace {

constexpr size_t kBlock = 1 << 20;  // bytes read (and compared) at a time
constexpr char kReceiptsSuffix[] = ".receipts.json";

// One owner per descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status SysError(const std::string& what, const std::string& path) {
  const int e = errno;
  return Status::Io(
      what + " " + path + ": " + std::strerror(e) + " (errno " + std::to_string(e) + ")", e);
}

bool Safe(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return SysError("cannot write", path);
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status ReadAll(int fd, uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return SysError("cannot read", path);
    if (r == 0) return Status::Io("cannot read " + path + ": shorter than expected");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status NotARegularFile(const std::string& path) {
  return Status::Refused("conflicting id: " + path +
                         " already exists and is not a regular file (a symlink, FIFO, device or "
                         "directory is never followed, read or compared)");
}

// Whether the existing file at `path` holds exactly the bytes read through `read`. Only a
// regular file is compared: a symlink is not followed (O_NOFOLLOW: the serve would answer
// whether any file it can read holds a sender's bytes) and a FIFO is not waited on
// (O_NONBLOCK: an open for reading would block the connection until a writer came).
Result<bool> SameBytes(const std::string& path, uint64_t bytes, const OutRead& read) {
  Fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0 && errno == ELOOP) return NotARegularFile(path);
  if (fd.get() < 0) return SysError("cannot open", path);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return SysError("cannot stat", path);
  if (!S_ISREG(st.st_mode)) return NotARegularFile(path);
  if (static_cast<uint64_t>(st.st_size) != bytes) return false;
  std::vector<uint8_t> ours(std::min<uint64_t>(bytes, kBlock)), theirs(ours.size());
  for (uint64_t off = 0; off < bytes; off += ours.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(ours.size(), bytes - off));
    WRIT_RETURN_IF_ERROR(read(off, std::span<uint8_t>(ours.data(), n)));
    WRIT_RETURN_IF_ERROR(ReadAll(fd.get(), theirs.data(), n, path));
    if (std::memcmp(ours.data(), theirs.data(), n) != 0) return false;
  }
  return true;
}

// An O_EXCL temporary in `dir`; its name starts with '.', which no OutName does.
Result<std::string> CreateTemp(const std::string& dir, int* fd_out) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path = dir + "/.writ-out-" + std::to_string(getpid()) + "-" +
                             std::to_string(counter.fetch_add(1)) + ".tmp";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *fd_out = fd;
      return path;
    }
    if (errno != EEXIST) return SysError("cannot create", path);
  }
  return Status::Io("cannot create a temporary file in " + dir + ": every name is taken");
}

Status SyncDir(const std::string& dir) {
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || fsync(fd.get()) != 0) return SysError("cannot sync directory", dir);
  return Status::Ok();
}

// Writes a temporary in `dir` through `fill`, fsynced when `sync`; returns its path.
Result<std::string> WriteTemp(const std::string& dir, bool sync,
                              const std::function<Status(int, const std::string&)>& fill) {
  int raw = -1;
  WRIT_ASSIGN_OR_RETURN(std::string temp, CreateTemp(dir, &raw));
  Fd fd(raw);
  Status filled = fill(fd.get(), temp);
  if (filled.ok() && sync && fsync(fd.get()) != 0) filled = SysError("cannot sync", temp);
  if (!filled.ok()) {
    unlink(temp.c_str());
    return filled;
  }
  return temp;
}

Status Conflict(const std::string& path) {
  return Status::Refused("conflicting id: " + path + " already exists with other content");
}

}  // namespace

Result<std::string> OutName(const std::string& id) {
  if (id.empty()) return Status::InvalidArgument("an empty delivery id has no output file name");
  std::string name;
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (Safe(c) && !(i == 0 && c == '.')) {
      name += static_cast<char>(c);
      continue;
    }
    char hex[4];
    std::snprintf(hex, sizeof hex, "%%%02X", c);
    name += hex;
  }
  const size_t suffix = sizeof kReceiptsSuffix - 1;
  if (name.size() >= suffix && name.compare(name.size() - suffix, suffix, kReceiptsSuffix) == 0) {
    name = name.substr(0, name.size() - 5) + "%2Ejson";  // ".receipts.json" -> ".receipts%2Ejson"
  }
  if (name.size() + suffix > 255) {
    return Status::InvalidArgument("delivery id " + id + " is too long for an output file name");
  }
  return name;
}

Status CheckOutDir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return SysError("output directory", dir);
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("output directory " + dir + ": not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0) return SysError("output directory", dir);
  return Status::Ok();
}

Status PublishOutPayload(const std::string& dir, const std::string& id, uint64_t bytes, bool sync,
                         const OutRead& read) {
  WRIT_ASSIGN_OR_RETURN(const std::string name, OutName(id));
  const std::string path = dir + "/" + name;
  struct stat there {};
  if (lstat(path.c_str(), &there) == 0) {  // lstat: a dangling symlink is there too
    WRIT_ASSIGN_OR_RETURN(const bool same, SameBytes(path, bytes, read));
    return same ? Status::Ok() : Conflict(path);
  }
  auto fill = [&](int fd, const std::string& temp) -> Status {
    std::vector<uint8_t> block(std::min<uint64_t>(bytes, kBlock));
    for (uint64_t off = 0; off < bytes; off += block.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), bytes - off));
      WRIT_RETURN_IF_ERROR(read(off, std::span<uint8_t>(block.data(), n)));
      WRIT_RETURN_IF_ERROR(WriteAll(fd, block.data(), n, temp));
    }
    return Status::Ok();
  };
  WRIT_ASSIGN_OR_RETURN(const std::string temp, WriteTemp(dir, sync, fill));
  // Never replaces: a file that appeared meanwhile is compared like one found before.
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    const bool exists = errno == EEXIST;
    Status failed = SysError("cannot publish", path);
    unlink(temp.c_str());
    if (!exists) return failed;
    WRIT_ASSIGN_OR_RETURN(const bool same, SameBytes(path, bytes, read));
    return same ? Status::Ok() : Conflict(path);
  }
  return sync ? SyncDir(dir) : Status::Ok();
}

Status PublishOutReceipts(const std::string& dir, const std::string& id,
                          const std::vector<std::string>& receipts, bool sync) {
  WRIT_ASSIGN_OR_RETURN(const std::string name, OutName(id));
  const std::string path = dir + "/" + name + kReceiptsSuffix;
  std::string text = "[";
  for (size_t i = 0; i < receipts.size(); ++i) text += (i ? ",\n" : "\n") + receipts[i];
  text += "\n]\n";
  auto fill = [&](int fd, const std::string& temp) {
    return WriteAll(fd, reinterpret_cast<const uint8_t*>(text.data()), text.size(), temp);
  };
  WRIT_ASSIGN_OR_RETURN(const std::string temp, WriteTemp(dir, sync, fill));
  if (rename(temp.c_str(), path.c_str()) != 0) {
    Status failed = SysError("cannot publish", path);
    unlink(temp.c_str());
    return failed;
  }
  return sync ? SyncDir(dir) : Status::Ok();
}

}  // namespace writ::receiver
