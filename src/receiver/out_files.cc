#include "receiver/out_files.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "receiver/out_dir.h"

namespace writ::receiver {
namespace {

constexpr char kOutReceiptsSuffix[] = ".receipts.json";

// The names `id` may have published under DIR: the payload, then its receipts.
std::vector<std::string> PublishedNames(const std::string& name) {
  return {name, name + kOutReceiptsSuffix};
}

Status OutFileError(const std::string& what, const std::string& path) {
  return Status::Io(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<std::string> RemoveOutFiles(const std::string& dir, const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(const std::string name, OutName(id));
  std::string removed;
  for (const std::string& file : PublishedNames(name)) {
    const std::string path = dir + "/" + file;
    if (unlink(path.c_str()) == 0) {
      removed += (removed.empty() ? "" : " and ") + path;
    } else if (errno != ENOENT) {
      return OutFileError("cannot remove", path);
    }
  }
  if (removed.empty()) return std::string();
  return "out: removed " + removed + " (delivery " + id + " is no longer retained)";
}

Result<std::string> SetAsideStaleOutFiles(const std::string& dir, const std::string& id,
                                          uint64_t now_ms) {
  WRIT_ASSIGN_OR_RETURN(const std::string name, OutName(id));
  std::string moved;
  for (const std::string& file : PublishedNames(name)) {
    const std::string from = dir + "/" + file;
    const std::string to = dir + "/." + file + ".stale-" + std::to_string(now_ms);
    if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
      moved += (moved.empty() ? "" : "; ") + from + " -> " + to;
    } else if (errno != ENOENT) {
      return OutFileError("cannot move aside", from);
    }
  }
  if (moved.empty()) return std::string();
  return "out: moved aside a stale output of " + id +
         " (no retained delivery behind it; a new delivery of the id takes its place): " + moved;
}

}  // namespace writ::receiver
