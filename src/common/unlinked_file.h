// An anonymous file in a directory: O_TMPFILE where the filesystem has it, else a
// mkstemp name unlinked at once (overlayfs, for one, refuses O_TMPFILE).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace writ {

// A read-write descriptor of a file with no name, or -1 with errno set.
inline int OpenUnlinkedFile(const std::string& dir) {
  const int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  std::string name = dir + "/.writ-XXXXXX";
  const int named = mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) unlink(name.c_str());
  return named;
}

}  // namespace writ
