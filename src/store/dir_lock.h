// The data directory's lock: DIR itself, flock'ed exclusively by the one process that may
// change the directory (a `writ serve --data DIR`, or a writing `writ store` command) for as
// long as it runs. Read-only access (`writ store ls|cat|check`) takes no lock: SQLite's WAL
// lets it read while a serve writes. The kernel drops the lock when the process dies, so a
// killed serve never leaves a stale lock behind. The directory, not a file in it: a lock
// file can be unlinked while its holder runs (`rm DIR/lock`), after which a second process
// locks a new file of the same name and writes beside the first; DIR cannot be unlinked
// from under its holder while it holds the store, and a DIR moved away is another path.
#pragma once

#include <memory>
#include <string>

#include "store/env.h"
#include "writ/status.h"

namespace writ::store {

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
