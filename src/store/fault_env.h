// An Env that fails chosen calls: the Nth call of an operation (or every call
// from the Nth on) returns a chosen errno instead of being made. Used by the
// store's tests and, through `writ serve --test-store-faults SPEC` (a hidden
// flag), by the fault tests against the real binary.
//
// SPEC is a comma-separated list of OP@N=ERR or OP@N+=ERR:
//   OP   open | write | fdatasync | fsync | syncdir | rename | remove |
//        index-write | index-truncate | index-sync
//   N    1-based count of that operation since Arm()
//   +    fail every call from the Nth on (a disk that stays broken)
//   ERR  EIO | ENOSPC | EDQUOT | EROFS | a number
// e.g. "fdatasync@1=EIO", "write@3=ENOSPC", "index-sync@2+=EIO".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "store/env.h"

namespace writ::store {

class FaultInjectionEnv : public EnvWrapper {
 public:
  struct Fault {
    std::string op;
    uint64_t nth = 1;
    bool and_after = false;
    int err = 0;
  };

  static Result<std::unique_ptr<FaultInjectionEnv>> Parse(const std::string& spec, Env* target);
  FaultInjectionEnv(std::vector<Fault> faults, Env* target);

  // Counting starts here (e.g. after the store's recovery, so a spec names calls of
  // deliveries, not of the start-up scan). Until then every call passes through.
  void Arm();
  // Called (outside any store lock) with a description of each injected fault.
  void set_on_inject(std::function<void(const std::string&)> fn);
  uint64_t injected() const;
  // Calls of `op` counted since Arm().
  uint64_t calls(const std::string& op) const;

  Result<int> Open(const std::string& path, int flags, mode_t mode) override;
  Status WriteAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) override;
  Status Fdatasync(int fd) override;
  Status Fsync(int fd) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Status BeforeIndexIo(IndexIo op, const std::string& path) override;

 private:
  // The errno to fail this call with, or 0 to make it.
  int Check(const std::string& op, const std::string& what);

  std::vector<Fault> faults_;
  mutable Mutex mu_;
  bool armed_ GUARDED_BY(mu_) = false;
  std::map<std::string, uint64_t> counts_ GUARDED_BY(mu_);
  uint64_t injected_ GUARDED_BY(mu_) = 0;
  std::function<void(const std::string&)> on_inject_ GUARDED_BY(mu_);
};

}  // namespace writ::store
