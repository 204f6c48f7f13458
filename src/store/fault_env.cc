#include "store/fault_env.h"

#include <cerrno>
#include <cstdlib>
#include <set>

namespace writ::store {
namespace {

const std::set<std::string>& KnownOps() {
  static const std::set<std::string> ops = {
      "open",   "write",  "fdatasync",   "fsync",          "syncdir",
      "rename", "remove", "index-write", "index-truncate", "index-sync"};
  return ops;
}

Result<int> ParseErrno(const std::string& text) {
  if (text == "EIO") return EIO;
  if (text == "ENOSPC") return ENOSPC;
  if (text == "EDQUOT") return EDQUOT;
  if (text == "EROFS") return EROFS;
  if (text == "EMFILE") return EMFILE;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
      text.size() < 5) {
    const int value = std::atoi(text.c_str());
    if (value > 0) return value;
  }
  return Status::InvalidArgument("unknown errno '" + text +
                                 "' (EIO, ENOSPC, EDQUOT, EROFS or a number)");
}

}  // namespace

Result<std::unique_ptr<FaultInjectionEnv>> FaultInjectionEnv::Parse(const std::string& spec,
                                                                    Env* target) {
  std::vector<Fault> faults;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t at = item.find('@');
    const size_t eq = item.find('=', at == std::string::npos ? 0 : at);
    if (at == std::string::npos || eq == std::string::npos) {
      return Status::InvalidArgument("fault '" + item + "': expected OP@N=ERR");
    }
    Fault f;
    f.op = item.substr(0, at);
    if (!KnownOps().contains(f.op))
      return Status::InvalidArgument("fault '" + item + "': unknown operation " + f.op);
    std::string count = item.substr(at + 1, eq - at - 1);
    if (!count.empty() && count.back() == '+') {
      f.and_after = true;
      count.pop_back();
    }
    if (count.empty() || count.size() > 9 ||
        count.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument("fault '" + item + "': bad count");
    }
    f.nth = std::strtoull(count.c_str(), nullptr, 10);
    if (f.nth == 0) return Status::InvalidArgument("fault '" + item + "': counts start at 1");
    WRIT_ASSIGN_OR_RETURN(f.err, ParseErrno(item.substr(eq + 1)));
    faults.push_back(f);
  }
  if (faults.empty()) return Status::InvalidArgument("empty fault specification");
  return std::make_unique<FaultInjectionEnv>(std::move(faults), target);
}

FaultInjectionEnv::FaultInjectionEnv(std::vector<Fault> faults, Env* target)
    : EnvWrapper(target), faults_(std::move(faults)) {}

void FaultInjectionEnv::Arm() {
  MutexLock lock(mu_);
  armed_ = true;
  counts_.clear();
}

void FaultInjectionEnv::set_on_inject(std::function<void(const std::string&)> fn) {
  MutexLock lock(mu_);
  on_inject_ = std::move(fn);
}

uint64_t FaultInjectionEnv::injected() const {
  MutexLock lock(mu_);
  return injected_;
}

uint64_t FaultInjectionEnv::calls(const std::string& op) const {
  MutexLock lock(mu_);
  auto it = counts_.find(op);
  return it == counts_.end() ? 0 : it->second;
}

int FaultInjectionEnv::Check(const std::string& op, const std::string& what) {
  std::function<void(const std::string&)> report;
  std::string message;
  int err = 0;
  {
    MutexLock lock(mu_);
    if (!armed_) return 0;
    const uint64_t n = ++counts_[op];
    for (const Fault& f : faults_) {
      if (f.op == op && (n == f.nth || (f.and_after && n > f.nth))) {
        err = f.err;
        break;
      }
    }
    if (err == 0) return 0;
    ++injected_;
    report = on_inject_;
    message = "test fault injected: " + op + " #" + std::to_string(n) + " (" + what + ") -> " +
              ErrnoName(err);
  }
  if (report) report(message);
  return err;
}

Result<int> FaultInjectionEnv::Open(const std::string& path, int flags, mode_t mode) {
  if (int err = Check("open", path)) return SysError("open(" + path + ")", err);
  return EnvWrapper::Open(path, flags, mode);
}

Status FaultInjectionEnv::WriteAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) {
  if (int err =
          Check("write", std::to_string(bytes.size()) + " bytes at " + std::to_string(offset))) {
    return SysError("pwrite", err);
  }
  return EnvWrapper::WriteAt(fd, bytes, offset);
}

Status FaultInjectionEnv::Fdatasync(int fd) {
  if (int err = Check("fdatasync", "fd " + std::to_string(fd))) return SysError("fdatasync", err);
  return EnvWrapper::Fdatasync(fd);
}

Status FaultInjectionEnv::Fsync(int fd) {
  if (int err = Check("fsync", "fd " + std::to_string(fd))) return SysError("fsync", err);
  return EnvWrapper::Fsync(fd);
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  if (int err = Check("rename", from + " -> " + to))
    return SysError("rename(" + from + ", " + to + ")", err);
  return EnvWrapper::Rename(from, to);
}

Status FaultInjectionEnv::Remove(const std::string& path) {
  if (int err = Check("remove", path)) return SysError("unlink(" + path + ")", err);
  return EnvWrapper::Remove(path);
}

Status FaultInjectionEnv::SyncDir(const std::string& path) {
  if (int err = Check("syncdir", path)) return SysError("fsync(" + path + "/)", err);
  return EnvWrapper::SyncDir(path);
}

Status FaultInjectionEnv::BeforeIndexIo(IndexIo op, const std::string& path) {
  const char* name = op == IndexIo::kWrite  ? "index-write"
                     : op == IndexIo::kSync ? "index-sync"
                                            : "index-truncate";
  if (int err = Check(name, path)) {
    return SysError(std::string(op == IndexIo::kSync    ? "fsync"
                                : op == IndexIo::kWrite ? "write"
                                                        : "ftruncate") +
                        "(" + path + ")",
                    err);
  }
  return EnvWrapper::BeforeIndexIo(op, path);
}

}  // namespace writ::store
