// The data directory's lock: DIR/lock, flock'ed exclusively by the one process that may
// change the directory (a `writ serve --data DIR`, or a writing `writ store` command) for as
// long as it runs. Read-only access (`writ store ls|cat|check`) takes no lock: SQLite's WAL
// lets it read while a serve writes. The kernel drops the lock when the process dies, so a
// killed serve never leaves a stale lock behind.
#pragma once

#include <memory>
#include <string>

#include "store/env.h"
#include "writ/status.h"

namespace writ::store {

inline constexpr const char* kLockFile = "lock";

class DirLock {
 public:
  // Retention error naming the directory when another process holds it.
  static Result<std::unique_ptr<DirLock>> Acquire(Env* env, const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  DirLock(Env* env, int fd) : env_(env), fd_(fd) {}
  Env* env_;
  int fd_;
};

}  // namespace writ::store
