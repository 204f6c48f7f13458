#include "store/quarantine.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

namespace writ::store {
namespace {

std::string QuarantinePath(const std::string& dir) { return dir + "/" + kQuarantineDir; }

bool IsWhy(const std::string& name) {
  const std::string suffix = kWhySuffix;
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A name as it lies in a directory: no path separators, not "." or "..".
bool PlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

Status WriteWhy(Env* env, const std::string& path, const std::string& why) {
  WRIT_ASSIGN_OR_RETURN(int fd, env->Open(path, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW, 0644));
  const std::string text = why + "\n";
  Status s = env->WriteAt(
      fd, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 0);
  if (s.ok()) s = env->Fdatasync(fd);
  Status closed = env->Close(fd);
  return s.ok() ? closed : s;
}

Result<std::string> ReadWhy(Env* env, const std::string& path) {
  WRIT_ASSIGN_OR_RETURN(FileInfo info, env->Lstat(path));
  if (!info.is_regular) return std::string("(its reason file is not a regular file)");
  WRIT_ASSIGN_OR_RETURN(int fd, env->Open(path, O_RDONLY | O_NOFOLLOW, 0));
  std::string text(static_cast<size_t>(std::min<uint64_t>(info.size, 4096)), '\0');
  Status s =
      env->ReadAt(fd, std::span<uint8_t>(reinterpret_cast<uint8_t*>(text.data()), text.size()), 0);
  (void)env->Close(fd);
  if (!s.ok()) return s;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

Status MoveToQuarantine(Env* env, const std::string& dir, const std::string& location,
                        const std::string& why) {
  const std::string qdir = QuarantinePath(dir);
  WRIT_RETURN_IF_ERROR(env->CreateDir(qdir).Annotate("quarantine"));
  const size_t slash = location.find_last_of('/');
  const std::string name = slash == std::string::npos ? location : location.substr(slash + 1);
  // The reason first: a crash after it leaves a reason without a file (harmless), never a
  // quarantined file without its reason.
  WRIT_RETURN_IF_ERROR(WriteWhy(env, qdir + "/" + name + kWhySuffix, why).Annotate("quarantine"));
  WRIT_RETURN_IF_ERROR(
      env->Rename(dir + "/" + location, qdir + "/" + name).Annotate("quarantine of " + location));
  WRIT_RETURN_IF_ERROR(env->SyncDir(qdir).Annotate("quarantine"));
  const std::string from = slash == std::string::npos ? dir : dir + "/" + location.substr(0, slash);
  WRIT_RETURN_IF_ERROR(env->SyncDir(from).Annotate("quarantine"));
  return env->SyncDir(dir).Annotate("quarantine");
}

Result<std::vector<QuarantinedFile>> ListQuarantine(Env* env, const std::string& dir) {
  const std::string qdir = QuarantinePath(dir);
  std::vector<QuarantinedFile> out;
  auto info = env->Lstat(qdir);
  if (!info.ok() && info.status().code() == ErrorCode::kNotFound) return out;
  if (!info.ok()) return info.status();
  if (!info->is_dir) return Status::Retention(qdir + " is not a directory");
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(qdir));
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (IsWhy(name)) continue;
    QuarantinedFile f;
    f.name = name;
    auto st = env->Lstat(qdir + "/" + name);
    if (st.ok()) f.bytes = st->size;
    auto why = ReadWhy(env, qdir + "/" + name + kWhySuffix);
    f.why = why.ok() ? *why : "(no reason recorded: " + why.status().message() + ")";
    out.push_back(std::move(f));
  }
  return out;
}

Status PurgeQuarantine(Env* env, const std::string& dir, const std::vector<std::string>& names) {
  const std::string qdir = QuarantinePath(dir);
  std::vector<std::string> targets = names;
  if (targets.empty()) {
    WRIT_ASSIGN_OR_RETURN(auto files, ListQuarantine(env, dir));
    for (const auto& f : files) targets.push_back(f.name);
  }
  for (const std::string& name : targets) {
    if (!PlainName(name) || IsWhy(name)) {
      return Status::InvalidArgument("'" + name + "' is not the name of a quarantined file");
    }
    auto st = env->Lstat(qdir + "/" + name);
    if (!st.ok()) {
      if (st.status().code() == ErrorCode::kNotFound)
        return Status::NotFound(name + " is not in " + qdir);
      return st.status();
    }
    WRIT_RETURN_IF_ERROR(env->Remove(qdir + "/" + name));
    Status why = env->Remove(qdir + "/" + name + kWhySuffix);
    if (!why.ok() && why.sys_errno() != ENOENT) return why;
  }
  if (!targets.empty()) WRIT_RETURN_IF_ERROR(env->SyncDir(qdir));
  return Status::Ok();
}

}  // namespace writ::store
