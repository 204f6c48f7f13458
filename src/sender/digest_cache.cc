#include "sender/digest_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/hex.h"
#include "writ/vocabulary.h"

namespace writ::sender {
namespace {

constexpr std::string_view kHeader = "writ-digest-cache 1";

// "DEV INO SIZE MTIME_NS CTIME_NS DIGEST_HEX RULE": the rule last, as its name may hold spaces.
bool ParseLine(const std::string& line, FileKey& key, std::string& rule, std::string& hex) {
  std::istringstream in(line);
  in >> key.device >> key.inode >> key.size >> key.mtime_ns >> key.ctime_ns >> hex;
  if (!in || in.get() != ' ') return false;
  std::getline(in, rule);
  return !rule.empty();
}

}  // namespace

std::vector<DigestCache::Entry> DigestCache::Load() const {
  std::ifstream in(path_);
  std::string line;
  if (!in || !std::getline(in, line) || line != kHeader) return {};
  std::vector<Entry> entries;
  while (std::getline(in, line)) {
    Entry e;
    std::string hex;
    if (!ParseLine(line, e.key, e.rule, hex)) return {};
    auto digest = FromHex(hex);
    auto rule = ParseRule(e.rule);
    if (!digest.ok() || !rule.ok() || digest->size() != DigestSize(*rule)) return {};
    e.digest = std::move(digest).value();
    entries.push_back(std::move(e));
  }
  return entries;
}

Status DigestCache::Store(const std::vector<Entry>& entries) const {
  std::ostringstream out;
  out << kHeader << '\n';
  const size_t first = entries.size() > capacity_ ? entries.size() - capacity_ : 0;
  for (size_t i = first; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    out << e.key.device << ' ' << e.key.inode << ' ' << e.key.size << ' ' << e.key.mtime_ns << ' '
        << e.key.ctime_ns << ' ' << ToHex(e.digest) << ' ' << e.rule << '\n';
  }
  const std::string text = out.str();
  const std::string tmp = path_ + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("digest cache " + tmp + ": " + std::strerror(errno), errno);
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = close(fd) == 0;
  if (!written || !closed || rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    (void)unlink(tmp.c_str());
    return Status::Io("digest cache " + path_ + ": " + std::strerror(err), err);
  }
  return Status::Ok();
}

std::optional<std::vector<uint8_t>> DigestCache::Find(const FileKey& key, Rule rule) const {
  const std::string name(RuleName(rule));
  for (const Entry& e : Load()) {
    if (e.key == key && e.rule == name) return e.digest;
  }
  return std::nullopt;
}

Status DigestCache::Remember(const FileKey& key, Rule rule,
                             const std::vector<uint8_t>& digest) const {
  std::vector<Entry> entries = Load();
  const std::string name(RuleName(rule));
  // One entry per file and rule: an older version of the same file is replaced.
  std::erase_if(entries, [&](const Entry& e) {
    return e.key.device == key.device && e.key.inode == key.inode && e.rule == name;
  });
  entries.push_back(Entry{key, name, digest});
  return Store(entries);
}

Status DigestCache::Forget(const FileKey& key, Rule rule) const {
  std::vector<Entry> entries = Load();
  const std::string name(RuleName(rule));
  const size_t before = entries.size();
  std::erase_if(entries, [&](const Entry& e) { return e.key == key && e.rule == name; });
  return entries.size() == before ? Status::Ok() : Store(entries);
}

int64_t RealtimeNowNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

bool OldEnoughToCache(const FileKey& key, int64_t started_ns) {
  timespec res{};
  if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0) res.tv_nsec = 10000000;
  const int64_t tick = static_cast<int64_t>(res.tv_sec) * 1000000000 + res.tv_nsec;
  const int64_t newest = std::max(key.mtime_ns, key.ctime_ns);
  return newest < started_ns - 2 * tick;
}

}  // namespace writ::sender
