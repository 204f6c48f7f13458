// Helpers for the durable store's in-process tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "random_bytes.h"
#include "store/durable_store.h"
#include "store/fault_env.h"
#include "temp_dir.h"
#include "vocabulary/digest.h"

namespace writ::store::testing {

using writ::testing::TempDir;

inline std::vector<uint8_t> Bytes(uint64_t seed, size_t n) {
  return writ::testing::RandomBytes(seed, n);
}

inline DeliveryMeta MetaFor(const std::string& id, const std::vector<uint8_t>& bytes,
                            uint64_t chunk = 4096, Rule rule = Rule::kXxh3_128) {
  auto digest = vocabulary::DigestOf(rule, bytes);
  EXPECT_TRUE(digest.ok());
  return DeliveryMeta{id,
                      bytes.size(),
                      chunk,
                      rule,
                      digest.ok() ? *digest : std::vector<uint8_t>{},
                      /*sender=*/"",
                      /*supersedes_weaker=*/false,
                      {}};
}

// What a receiver does: Begin, Write chunk by chunk, Commit, AppendReceipt.
struct Stored {
  Status status;                              // the first failure, or Ok
  std::optional<RetentionEvidence> evidence;  // when Commit succeeded
};

inline Stored StoreDelivery(Store& store, const DeliveryMeta& meta,
                            const std::vector<uint8_t>& bytes, RetentionClass retention) {
  Stored out;
  auto writer = store.Begin(meta, retention);
  if (!writer.ok()) {
    out.status = writer.status();
    return out;
  }
  for (uint64_t off = 0; off < bytes.size(); off += meta.chunk_size) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(meta.chunk_size, bytes.size() - off));
    Status s = (*writer)->Write(off, std::span<const uint8_t>(bytes.data() + off, n));
    if (!s.ok()) {
      out.status = s;
      return out;
    }
  }
  auto ev = (*writer)->Commit({"{\"rung\":\"received\"}", "{\"rung\":\"validated\"}"});
  if (!ev.ok()) {
    out.status = ev.status();
    return out;
  }
  out.evidence = *ev;
  out.status = store.AppendReceipt(meta.id, "{\"rung\":\"retained\"}");
  return out;
}

inline std::vector<uint8_t> ReadAll(Store& store, const std::string& id, uint64_t bytes) {
  std::vector<uint8_t> out(bytes);
  Status s = store.Read(id, 0, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Records every Env call the store makes, in order ("fdatasync p/..tmp", ...).
class RecordingEnv : public EnvWrapper {
 public:
  RecordingEnv() : EnvWrapper(Env::Default()) {}
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void Clear() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }

  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    auto fd = EnvWrapper::Open(path, flags, mode);
    if (fd.ok()) Note("open " + Short(path), *fd);
    return fd;
  }
  Status Close(int fd) override {
    Note("close " + NameOf(fd));
    return EnvWrapper::Close(fd);
  }
  Status WriteAt(int fd, std::span<const uint8_t> b, uint64_t off) override {
    Note("write " + NameOf(fd));
    return EnvWrapper::WriteAt(fd, b, off);
  }
  Status Fdatasync(int fd) override {
    Note("fdatasync " + NameOf(fd));
    return EnvWrapper::Fdatasync(fd);
  }
  Status Fsync(int fd) override {
    Note("fsync " + NameOf(fd));
    return EnvWrapper::Fsync(fd);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    Note("rename " + Short(from) + " " + Short(to));
    return EnvWrapper::Rename(from, to);
  }
  Status Remove(const std::string& path) override {
    Note("remove " + Short(path));
    return EnvWrapper::Remove(path);
  }
  Status SyncDir(const std::string& path) override {
    Note("syncdir " + Short(path));
    return EnvWrapper::SyncDir(path);
  }
  Status BeforeIndexIo(IndexIo op, const std::string& path) override {
    if (op == IndexIo::kSync) Note("index-sync " + path);
    return EnvWrapper::BeforeIndexIo(op, path);
  }

 private:
  static std::string Short(const std::string& path) {
    const size_t p = path.rfind("/payloads/");
    if (p != std::string::npos) return path.substr(p + 1);
    const size_t s = path.find_last_of('/');
    return s == std::string::npos ? path : path.substr(s + 1);
  }
  std::string NameOf(int fd) {
    std::lock_guard lock(mu_);
    auto it = names_.find(fd);
    return it == names_.end() ? "fd" : it->second;
  }
  void Note(const std::string& call, int fd = -1) {
    std::lock_guard lock(mu_);
    calls_.push_back(call);
    if (fd >= 0) names_[fd] = call.substr(5);
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
  std::map<int, std::string> names_;
};

}  // namespace writ::store::testing
