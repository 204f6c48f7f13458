#include "store/dir_lock.h"

#include <cerrno>

namespace writ::store {

Result<std::unique_ptr<DirLock>> DirLock::Acquire(Env* env, const std::string& dir) {
  auto fd = env->LockDir(dir);
  if (!fd.ok()) {
    const int err = fd.status().sys_errno();
    if (err == EWOULDBLOCK || err == EAGAIN) {
      return Status::Retention("data directory " + dir +
                               " is in use by another writ process (it holds the directory's lock)"
                               ": refusing to touch it while that process runs");
    }
    return Status::Retention("cannot lock the data directory " + dir + ": " +
                             fd.status().message());
  }
  return std::unique_ptr<DirLock>(new DirLock(env, *fd));
}

DirLock::~DirLock() { (void)env_->Close(fd_); }

}  // namespace writ::store
