// Digests of files sent before, so that a repeated send of an unchanged file can announce
// its digest (and be answered without moving bytes, when this sender delivered them).
// Kept in one small text file beside the sender's identity (DIR/digest-cache), the most
// recent entries only, rewritten whole and renamed into place. A cache that is missing,
// unreadable or corrupt is an empty one: it never fails a send.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sender/delivery_source.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ::sender {

class DigestCache {
 public:
  static constexpr size_t kDefaultCapacity = 256;
  explicit DigestCache(std::string path, size_t capacity = kDefaultCapacity)
      : path_(std::move(path)), capacity_(capacity) {}

  const std::string& path() const { return path_; }
  // The digest recorded for exactly this file version and rule, if any.
  std::optional<std::vector<uint8_t>> Find(const FileKey& key, Rule rule) const;
  // Records a digest computed over the file while its key was `key`, dropping the oldest
  // entries beyond the capacity.
  Status Remember(const FileKey& key, Rule rule, const std::vector<uint8_t>& digest) const;
  // Drops the entry (e.g. the receiver refused its digest).
  Status Forget(const FileKey& key, Rule rule) const;

 private:
  struct Entry {
    FileKey key;
    std::string rule;
    std::vector<uint8_t> digest;
  };
  std::vector<Entry> Load() const;  // empty when missing or corrupt
  Status Store(const std::vector<Entry>& entries) const;

  std::string path_;
  size_t capacity_;
};

// A digest computed at `started_ns` (CLOCK_REALTIME) may be cached only when the file's
// timestamps are older than two ticks of the kernel's coarse clock, which stamps them: a
// write within the same tick would otherwise leave the key unchanged.
bool OldEnoughToCache(const FileKey& key, int64_t started_ns);
int64_t RealtimeNowNs();

}  // namespace writ::sender
