#include "store/durable_store.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "common/hex.h"
#include "common/io_buffer.h"
#include "store/quarantine.h"
#include "store/scrubber.h"
#include "store/sync_description.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::store {
namespace {

constexpr size_t kBlock = 1 << 20;

std::string ParentOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// "payloads/p00000000000000ff.dat" -> 255; 0 when the name is not one of ours.
uint64_t SeqOf(const std::string& name) {
  const size_t p = name.rfind('p');
  if (p == std::string::npos || name.size() < p + 17) return 0;
  uint64_t seq = 0;
  for (size_t i = p + 1; i < p + 17; ++i) {
    const char c = name[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return 0;
    seq = seq * 16 + static_cast<uint64_t>(v);
  }
  return seq;
}

bool IsSyncError(const Status& s) {
  return s.code() == ErrorCode::kIo && s.sys_errno() != ENOSPC && s.sys_errno() != EDQUOT;
}

// The later of two promised ends (0: held until removed, later than any time): an upgrade
// keeps what the weaker copy was promised when its own class promises less.
uint64_t LaterPromisedEnd(uint64_t own, std::optional<uint64_t> weaker) {
  if (!weaker) return own;
  if (own == 0 || *weaker == 0) return 0;
  return std::max(own, *weaker);
}

}  // namespace

std::string_view VerifyOnStartName(VerifyOnStart mode) {
  switch (mode) {
    case VerifyOnStart::kAll: return "all";
    case VerifyOnStart::kUnsynced: return "unsynced";
    case VerifyOnStart::kNone: return "none";
  }
  return "unknown";
}

Result<VerifyOnStart> ParseVerifyOnStart(std::string_view name) {
  if (name == "all") return VerifyOnStart::kAll;
  if (name == "unsynced") return VerifyOnStart::kUnsynced;
  if (name == "none") return VerifyOnStart::kNone;
  return Status::InvalidArgument("verify-on-start must be all, unsynced or none, not '" +
                                 std::string(name) + "'");
}

std::vector<std::string> RecoveryReport::Lines() const {
  std::vector<std::string> lines;
  lines.push_back(
      "store recovery: " + std::to_string(retained) + " retained, " + std::to_string(verified) +
      " re-hashed, " + std::to_string(corrupt.size()) + " corrupt dropped, " +
      std::to_string(orphans_removed) + " orphans removed, " + std::to_string(unreceipted.size()) +
      " unreceipted dropped, " + std::to_string(quarantined.size()) +
      " payloads quarantined (data " + data_dir + ", filesystem " + filesystem +
      ", verify-on-start " + std::string(VerifyOnStartName(verify)) +
      (previous_sync_failure ? ", a sync had failed before: everything re-hashed" : "") + ")");
  for (const auto& c : corrupt) lines.push_back("store recovery: dropped corrupt delivery " + c);
  for (const auto& u : unreceipted) {
    lines.push_back("store recovery: dropped " + u +
                    ": committed but its retained receipt was never recorded, so never issued");
  }
  for (const auto& q : quarantined) {
    lines.push_back("store recovery: quarantined " + q);
  }
  return lines;
}

// ---- the writer -----------------------------------------------------------------------------

class DurableWriter : public PayloadWriter {
 public:
  DurableWriter(DurableStore& store, DeliveryMeta meta, RetentionClass retention, uint64_t seq,
                int fd)
      : store_(store),
        meta_(std::move(meta)),
        retention_(retention),
        tmp_(store.Location(seq, ".tmp")),
        final_(store.Location(seq, ".dat")),
        fd_(fd) {}

  ~DurableWriter() override {
    if (fd_ >= 0) (void)store_.env_->Close(fd_);
    if (!committed_) {
      // Uncommitted: its bytes are discarded. (If this fails, recovery removes the orphan.)
      (void)store_.env_->Remove(store_.PathOf(renamed_ ? final_ : tmp_));
    }
    store_.Release(taken_);
  }

  // Called as each window is granted: the disk space for its bytes is promised now, not
  // for the whole delivery at the announce (an announce that is never written must not
  // hold a disk's worth of space from other senders). The bytes are copied, not placed.
  Result<uint8_t*> Placement(uint64_t offset, uint64_t length) override {
    (void)offset;
    WRIT_RETURN_IF_ERROR(store_.Take(meta_.id, length));
    taken_ += length;
    return nullptr;
  }

  Status Write(uint64_t offset, std::span<const uint8_t> bytes) override {
    if (fd_ < 0) return Status::Internal("write after commit");
    if (offset > meta_.bytes || bytes.size() > meta_.bytes - offset) {
      return Status::InvalidArgument("durable store: write past the delivery's end");
    }
    const bool power = retention_ == RetentionClass::kPowerLoss;
    // Aligned chunks go to the device straight from the receiver's window (O_DIRECT),
    // skipping the copy into freshly allocated page cache -- the dearest part of storing
    // them; the rest (an unaligned tail) is written through the page cache. Either way the
    // bytes are with the OS when the write returns, which is all process-restart needs;
    // for power-loss the commit's fdatasync covers both, and the file's metadata.
    const bool direct = direct_possible_ && Aligned(bytes.data(), offset, bytes.size());
    if (direct != direct_on_) {
      Status switched = store_.env_->SetDirectIo(fd_, direct);
      if (switched.ok()) {
        direct_on_ = direct;
      } else if (direct) {
        direct_possible_ = false;  // this file system has no O_DIRECT: buffered from now on
        direct_refused_ = switched.message();
      } else {
        return switched.Annotate("durable store: " + tmp_);
      }
    }
    Status s = store_.env_->WriteAt(fd_, bytes, offset);
    if (!s.ok()) {
      return s.Annotate("durable store: writing " + std::to_string(bytes.size()) + " bytes of " +
                        meta_.id + " to " + tmp_ + (direct_on_ ? " (O_DIRECT)" : ""));
    }
    ++writes_;
    written_ += bytes.size();
    if (direct_on_) {
      ++direct_writes_;
      direct_bytes_ += bytes.size();
    } else if (power) {
      // Start the disk on these bytes now, so the commit's fdatasync waits only for the
      // tail instead of the whole delivery. Only a hint: the fdatasync decides, and reports
      // any failure of this writeback too.
      (void)store_.env_->StartWriteback(fd_, offset, bytes.size());
    }
    return Status::Ok();
  }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    if (fd_ < 0) return store_.Read(meta_.id, offset, out);
    if (direct_on_) {  // reads into arbitrary buffers go through the page cache
      WRIT_RETURN_IF_ERROR(store_.env_->SetDirectIo(fd_, false).Annotate("durable store: " + tmp_));
      direct_on_ = false;
    }
    if (offset > meta_.bytes || out.size() > meta_.bytes - offset) {
      return Status::InvalidArgument("read past the end of delivery " + meta_.id);
    }
    return store_.env_->ReadAt(fd_, out, offset);
  }

  void SetDigest(std::vector<uint8_t> digest) override { meta_.digest = std::move(digest); }
  void KeepWeakerPromise(uint64_t held_until_ms) override { weaker_held_until_ = held_until_ms; }
  Result<RetentionEvidence> Commit(const std::vector<std::string>& receipts) override;

 private:
  bool power() const { return retention_ == RetentionClass::kPowerLoss; }
  // The steps of Commit, in order (docs/retention.md, "The sequence of each class").
  Status CheckCommittable() const;
  PayloadWrites Writes() const;
  Result<SyncRecord> SyncPayload();
  Result<RenameRecord> RenameIntoPlace();
  Result<SyncRecord> SyncPayloadDirectory();
  IndexRow RowFor(const std::vector<std::string>& receipts) const;
  std::chrono::milliseconds Ttl() const {
    auto it = store_.options_.ttl.find(retention_);
    return it == store_.options_.ttl.end() ? std::chrono::milliseconds(0) : it->second;
  }
  Result<IndexRecord> CommitRow(const std::vector<std::string>& receipts);

  DurableStore& store_;
  DeliveryMeta meta_;
  RetentionClass retention_;
  std::string tmp_, final_;
  int fd_;
  static bool Aligned(const uint8_t* data, uint64_t offset, uint64_t length) {
    return reinterpret_cast<uintptr_t>(data) % kDirectIoAlignment == 0 &&
           offset % kDirectIoAlignment == 0 && length % kDirectIoAlignment == 0 && length > 0;
  }
  // O_DIRECT needs buffer, offset and length aligned to the device's logical block; 4 KiB
  // covers 512-byte and 4 KiB devices alike.
  static constexpr uint64_t kDirectIoAlignment = 4096;

  uint64_t writes_ = 0;
  uint64_t written_ = 0;
  bool direct_possible_ = true;
  bool direct_on_ = false;
  std::string direct_refused_;  // why O_DIRECT could not be used, when it could not
  uint64_t direct_writes_ = 0;
  uint64_t direct_bytes_ = 0;
  bool renamed_ = false;
  bool committed_ = false;
  uint64_t taken_ = 0;       // disk promised to this delivery so far (Placement)
  uint64_t held_until_ = 0;  // the end of its time-to-live (Unix ms), set at the commit
  std::optional<uint64_t> weaker_held_until_;  // KeepWeakerPromise
};

// The sync sequence of docs/retention.md, a step at a time; each step's record says what it
// made durable and how, and the receipt's words are rendered from those records alone.
Result<RetentionEvidence> DurableWriter::Commit(const std::vector<std::string>& receipts) {
  WRIT_RETURN_IF_ERROR(CheckCommittable());
  SyncSteps steps;
  steps.retention = retention_;
  steps.writes = Writes();
  WRIT_ASSIGN_OR_RETURN(steps.payload_sync, SyncPayload());
  WRIT_ASSIGN_OR_RETURN(steps.rename, RenameIntoPlace());
  WRIT_ASSIGN_OR_RETURN(steps.directory_sync, SyncPayloadDirectory());
  WRIT_ASSIGN_OR_RETURN(steps.index, CommitRow(receipts));
  RetentionEvidence ev = DescribeCommit(steps, meta_, StorePlace{store_.dir_, store_.fs_.type});
  ev.held_until_ms = held_until_;
  ev.ttl = Ttl();
  return ev;
}

Status DurableWriter::CheckCommittable() const {
  if (fd_ < 0 || committed_) return Status::Internal("commit of " + meta_.id + " twice");
  if (written_ < meta_.bytes) {
    // Chunks may be rewritten (retries), so this is a floor, not an equality.
    return Status::Internal("commit of " + meta_.id + " with only " + std::to_string(written_) +
                            " of " + std::to_string(meta_.bytes) + " bytes written");
  }
  if (power()) {
    if (auto sticky = store_.sticky_failure()) {
      return Status::Retention("power-loss retention refused: " + *sticky +
                               " earlier; restart the receiver so its store is re-checked");
    }
  }
  return Status::Ok();
}

PayloadWrites DurableWriter::Writes() const {
  return PayloadWrites{tmp_, writes_, written_, direct_writes_, direct_bytes_, direct_refused_};
}

// 2. fdatasync of the payload (power-loss); process-restart syncs nothing.
Result<SyncRecord> DurableWriter::SyncPayload() {
  if (!power()) return SyncRecord{tmp_, SyncMethod::kNone};
  Status synced = store_.env_->Fdatasync(fd_);
  if (!synced.ok()) {
    store_.MarkSticky("fdatasync(" + tmp_ + ") failed (" + synced.message() + ")");
    return Status::Retention("power-loss retention of " + meta_.id + " failed: fdatasync(" + tmp_ +
                             "): " + synced.message());
  }
  return SyncRecord{tmp_, SyncMethod::kFdatasync};
}

// 3. close, and rename of the temporary name into place.
Result<RenameRecord> DurableWriter::RenameIntoPlace() {
  const int fd = fd_;
  fd_ = -1;
  Status closed = store_.env_->Close(fd);
  if (!closed.ok()) {
    // A close error can report a failed writeback (e.g. NFS): the bytes may not be there.
    if (IsSyncError(closed))
      store_.MarkSticky("close(" + tmp_ + ") failed (" + closed.message() + ")");
    return Status::Retention("retention of " + meta_.id + " failed: close(" + tmp_ +
                             "): " + closed.message());
  }
  Status renamed = store_.env_->Rename(store_.PathOf(tmp_), store_.PathOf(final_));
  if (!renamed.ok()) {
    return Status::Retention("retention of " + meta_.id + " failed: " + renamed.message());
  }
  renamed_ = true;
  return RenameRecord{tmp_, final_};
}

// 4. fsync of payloads/, the directory of the rename (power-loss).
Result<SyncRecord> DurableWriter::SyncPayloadDirectory() {
  if (!power()) return SyncRecord{kPayloadDir, SyncMethod::kNone};
  Status dir_synced = store_.env_->SyncDir(store_.PathOf(kPayloadDir));
  if (!dir_synced.ok()) {
    store_.MarkSticky("fsync of directory " + std::string(kPayloadDir) + "/ failed (" +
                      dir_synced.message() + ")");
    return Status::Retention("power-loss retention of " + meta_.id +
                             " failed: " + dir_synced.message());
  }
  return SyncRecord{kPayloadDir, SyncMethod::kFsync};
}

IndexRow DurableWriter::RowFor(const std::vector<std::string>& receipts) const {
  IndexRow row;
  row.id = meta_.id;
  row.bytes = meta_.bytes;
  row.chunk_size = meta_.chunk_size;
  row.rule = meta_.rule;
  row.digest = meta_.digest;
  row.retention = retention_;
  row.location = final_;
  row.receipts = receipts;
  row.state = RowState::kCommitted;
  row.committed_at = NowRfc3339Utc();
  row.sender = meta_.sender;
  row.held_until_ms = held_until_;
  row.supersedes_weaker = meta_.supersedes_weaker;
  row.region_lengths = meta_.region_lengths;
  return row;
}

// 5. the index row, committed (synchronous=FULL for power-loss, NORMAL otherwise).
Result<IndexRecord> DurableWriter::CommitRow(const std::vector<std::string>& receipts) {
  // The time-to-live runs from the commit; the receipt promises the delivery until then.
  const auto ttl = Ttl();
  held_until_ = ttl.count() > 0 ? NowUnixMs() + static_cast<uint64_t>(ttl.count()) : 0;
  held_until_ = LaterPromisedEnd(held_until_, weaker_held_until_);
  const IndexRow row = RowFor(receipts);
  IndexCommit commit;
  std::string replaced;
  const uint64_t failures_before = store_.index_->sync_failures();
  if (power() && store_.sticky_failure()) {
    return Status::Retention("power-loss retention refused: " + *store_.sticky_failure());
  }
  const IndexSync mode = power() ? IndexSync::kFull : IndexSync::kNormal;
  Status inserted = store_.index_->Insert(row, mode, &commit, &replaced);
  store_.NoteIndexSyncs(failures_before, "index commit of " + meta_.id);
  if (!inserted.ok()) {
    if (inserted.code() == ErrorCode::kRefused) return inserted;  // conflicting id: nothing to undo
    store_.Undo(meta_.id, final_);
    committed_ = true;  // Undo removed the payload, or left it for recovery if the row is stuck
    return Status::Retention("retention of " + meta_.id + " failed: " + inserted.message());
  }
  if (!replaced.empty() && replaced != final_) (void)store_.env_->Remove(store_.PathOf(replaced));
  committed_ = true;
  return IndexRecord{kIndexFile, power() ? SyncMethod::kSqliteFull : SyncMethod::kSqliteNormal,
                     commit.Describe()};
}

// ---- the store ------------------------------------------------------------------------------

DurableStore::DurableStore(std::string dir, DurableOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {
  env_ = options_.env ? options_.env.get() : Env::Default();
}

DurableStore::~DurableStore() { scrubber_.reset(); }

bool IsPayloadLocation(const std::string& location) {
  const std::string prefix = std::string(kPayloadDir) + "/p";
  if (location.size() != prefix.size() + 16 + 4 || location.rfind(prefix, 0) != 0) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 16; ++i) {
    const char c = location[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return location.compare(prefix.size() + 16, 4, ".dat") == 0;
}

std::string DurableStore::Location(uint64_t seq, const char* suffix) const {
  char name[64];
  std::snprintf(name, sizeof name, "%s/p%016" PRIx64 "%s", kPayloadDir, seq, suffix);
  return name;
}

Result<std::unique_ptr<DurableStore>> DurableStore::Open(const std::string& dir,
                                                         DurableOptions options,
                                                         RecoveryReport* report) {
  if (dir.empty()) return Status::InvalidArgument("empty data directory");
  std::string clean = dir;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  auto store = std::unique_ptr<DurableStore>(new DurableStore(clean, std::move(options)));
  WRIT_RETURN_IF_ERROR(store->PrepareDirectory());
  Env* env = store->env_;
  const bool read_only = store->options_.read_only;
  auto fs = env->StatFs(clean);
  store->fs_ = fs.ok() ? *fs : FsInfo{"unknown (" + fs.status().message() + ")", 0, 0};

  bool created = false;
  WRIT_ASSIGN_OR_RETURN(store->index_,
                        Index::Open(clean + "/" + kIndexFile, env, read_only, &created));
  if (created) WRIT_RETURN_IF_ERROR(env->SyncDir(clean).Annotate("after creating the index"));
  if (read_only || !store->options_.recover) return store;

  RecoveryReport local;
  WRIT_RETURN_IF_ERROR(store->Recover(report ? report : &local));
  if (store->options_.scrub_bytes_per_second > 0) {
    WRIT_ASSIGN_OR_RETURN(store->scrubber_,
                          Scrubber::Start(*store, store->options_.scrub_bytes_per_second));
  }
  return store;
}

// The rule (docs/retention.md, "Fresh or damaged"): a directory that does not exist, or
// has neither index.db nor a non-empty payloads/, is fresh and initialised. One with
// index.db but no payloads/, or payload files but no index.db, is damaged: recovery would
// have to drop every row or treat every payload as unexplained, so the store refuses to
// open it and names what is missing.
Status DurableStore::PrepareDirectory() {
  const std::string& dir = dir_;
  const bool read_only = options_.read_only;
  auto info = env_->Stat(dir);
  if (!info.ok()) {
    if (info.status().code() != ErrorCode::kNotFound || read_only) {
      return Status::Retention("data directory " + dir + ": " + info.status().message());
    }
    WRIT_RETURN_IF_ERROR(env_->CreateDir(dir).Annotate("data directory"));
    WRIT_RETURN_IF_ERROR(env_->SyncDir(ParentOf(dir)).Annotate("data directory"));
  } else if (!info->is_dir) {
    return Status::InvalidArgument("data directory " + dir + " is not a directory");
  }
  if (!read_only) {
    WRIT_ASSIGN_OR_RETURN(lock_, DirLock::Acquire(env_, dir));
  }
  const std::string payloads = dir + "/" + kPayloadDir;
  const std::string index = dir + "/" + kIndexFile;
  auto pinfo = env_->Lstat(payloads);
  if (!pinfo.ok() && pinfo.status().code() != ErrorCode::kNotFound) {
    return Status::Retention("cannot read " + payloads + ": " + pinfo.status().message());
  }
  if (pinfo.ok() && !pinfo->is_dir) {
    return Status::Retention(payloads + " is not a directory (a symbolic link is refused)");
  }
  auto iinfo = env_->Stat(index);
  if (!iinfo.ok() && iinfo.status().code() != ErrorCode::kNotFound) {
    return Status::Retention("cannot read the index " + index + ": " + iinfo.status().message());
  }
  size_t payload_files = 0;
  if (pinfo.ok()) {
    auto names = env_->ListDir(payloads);
    if (!names.ok()) {
      return Status::Retention("cannot read " + payloads + ": " + names.status().message());
    }
    payload_files = names->size();
  }
  if (iinfo.ok() && !pinfo.ok()) {
    return Status::Retention("data directory " + dir + " is damaged: " + payloads +
                             " is missing but the index " + index +
                             " exists; refusing to start (recovery would drop every retained "
                             "delivery). Restore " +
                             payloads + "/, or move the directory away");
  }
  if (!iinfo.ok() && payload_files > 0) {
    return Status::Retention("data directory " + dir + " is damaged: the index " + index +
                             " is missing but " + payloads + " holds " +
                             std::to_string(payload_files) +
                             " files; refusing to start (recovery would have to treat every "
                             "payload as unexplained). Restore the index, or move the "
                             "directory away");
  }
  if (!pinfo.ok()) {
    if (read_only)
      return Status::NotFound(dir + " is not a writ data directory (no " + kPayloadDir + "/)");
    WRIT_RETURN_IF_ERROR(env_->CreateDir(payloads));
    WRIT_RETURN_IF_ERROR(env_->SyncDir(dir));
  }
  return Status::Ok();
}

Status DurableStore::CheckPayload(const IndexRow& row, bool rehash) {
  if (!IsPayloadLocation(row.location)) {
    return Status::Validation("its payload location '" + row.location +
                              "' is not a payload file name of this store");
  }
  const std::string path = PathOf(row.location);
  auto info = env_->Lstat(path);
  if (!info.ok()) {
    if (info.status().code() == ErrorCode::kNotFound) {
      return Status::Validation("its payload " + row.location + " is missing");
    }
    return info.status();
  }
  if (!info->is_regular) {
    return Status::Validation("its payload " + row.location +
                              " is not a regular file (a symbolic link is never followed)");
  }
  if (info->size != row.bytes) {
    return Status::Validation("its payload " + row.location + " has " + std::to_string(info->size) +
                              " bytes, not " + std::to_string(row.bytes));
  }
  if (!rehash) return Status::Ok();
  return Stream(row, [](std::span<const uint8_t>) { return Status::Ok(); });
}

Result<int> DurableStore::OpenPayload(const IndexRow& row) {
  if (!IsPayloadLocation(row.location)) {
    return Status::Validation(row.id + ": its payload location '" + row.location +
                              "' is not a payload file name of this store");
  }
  auto fd = env_->Open(PathOf(row.location), O_RDONLY | O_NOFOLLOW, 0);
  if (!fd.ok()) {
    if (fd.status().sys_errno() == ENOENT) {
      return Status::Validation(row.id + ": its payload " + row.location + " is missing");
    }
    if (fd.status().sys_errno() == ELOOP) {
      return Status::Validation(row.id + ": its payload " + row.location +
                                " is a symbolic link (never followed)");
    }
    return fd.status();
  }
  return fd;
}

Status DurableStore::Stream(const IndexRow& row,
                            const std::function<Status(std::span<const uint8_t>)>& sink) {
  WRIT_ASSIGN_OR_RETURN(int payload_fd, OpenPayload(row));
  auto fd = &payload_fd;
  WRIT_ASSIGN_OR_RETURN(auto digester, vocabulary::Digester::Create(row.rule));
  IoBuffer block(static_cast<size_t>(std::min<uint64_t>(kBlock, std::max<uint64_t>(row.bytes, 1))));
  Status s;
  uint64_t done = 0;
  while (s.ok() && done < row.bytes) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), row.bytes - done));
    s = env_->ReadAt(*fd, std::span<uint8_t>(block.data(), n), done);
    if (!s.ok()) {
      if (s.sys_errno() == 0) {  // the file ended early
        s = Status::Validation(row.id + ": its payload " + row.location + " ends before " +
                               std::to_string(row.bytes) + " bytes");
      }
      break;
    }
    digester->Update(std::span<const uint8_t>(block.data(), n));
    s = sink(std::span<const uint8_t>(block.data(), n));
    done += n;
  }
  if (s.ok()) {
    // Bytes beyond the recorded length are a mismatch too.
    uint8_t extra = 0;
    Status more = env_->ReadAt(*fd, std::span<uint8_t>(&extra, 1), row.bytes);
    if (more.ok())
      s = Status::Validation(row.id + ": its payload " + row.location + " is longer than " +
                             std::to_string(row.bytes) + " bytes");
  }
  (void)env_->Close(*fd);
  if (!s.ok()) return s;
  const std::vector<uint8_t> got = digester->Finish();
  if (got != row.digest) {
    return Status::Validation(row.id + ": its bytes have " + std::string(writ::RuleName(row.rule)) +
                              " " + writ::ToHex(got) + ", not the recorded " +
                              writ::ToHex(row.digest));
  }
  return Status::Ok();
}

Status DurableStore::Verify(const IndexRow& row) {
  WRIT_RETURN_IF_ERROR(CheckPayload(row, false));
  return StreamAndStamp(row, [](std::span<const uint8_t>) { return Status::Ok(); });
}

// A re-hash stands for later answers only for the file version it read: stat before and
// after, the same, and changed long enough ago that a write landing in the same tick of the
// kernel's coarse clock (which stamps the times) cannot leave them unchanged.
Status DurableStore::StreamAndStamp(const IndexRow& row,
                                    const std::function<Status(std::span<const uint8_t>)>& sink) {
  constexpr int64_t kSettledNs = 50'000'000;  // many coarse-clock ticks
  const std::string path = PathOf(row.location);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t started_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
  auto before = env_->Stat(path);
  ++rehashes_;
  Status s = Stream(row, sink);
  auto after = env_->Stat(path);
  MutexLock lock(stamps_mu_);
  stamps_.erase(row.id);
  if (s.ok() && before.ok() && after.ok() && before->SameVersion(*after) &&
      started_ns - std::max(after->ctime_ns, after->mtime_ns) > kSettledNs) {
    stamps_[row.id] = VerifiedStamp{row.location, *after, std::chrono::steady_clock::now()};
  }
  return s;
}

bool DurableStore::VerifiedRecently(const IndexRow& row) {
  if (options_.verified_for.count() <= 0) return false;
  VerifiedStamp stamp;
  {
    MutexLock lock(stamps_mu_);
    auto it = stamps_.find(row.id);
    if (it == stamps_.end()) return false;
    stamp = it->second;
  }
  if (stamp.location != row.location ||
      std::chrono::steady_clock::now() - stamp.at >= options_.verified_for) {
    return false;
  }
  auto info = env_->Stat(PathOf(row.location));
  return info.ok() && info->SameVersion(stamp.version);
}

Status DurableStore::Recover(RecoveryReport* report) {
  report->data_dir = dir_;
  report->filesystem = fs_.type;
  report->verify = options_.verify;
  auto marker = env_->Stat(dir_ + "/" + kSyncFailedMarker);
  report->previous_sync_failure = marker.ok();

  WRIT_ASSIGN_OR_RETURN(std::vector<IndexRow> rows, index_->All());
  std::vector<std::string> drop;
  std::set<std::string> kept_locations;
  std::map<std::string, std::string> dropped;  // location -> why, for the quarantine
  uint64_t max_seq = 0;
  for (const IndexRow& row : rows) {
    max_seq = std::max(max_seq, SeqOf(row.location));
    const std::string what = row.id + " (" + std::string(writ::RetentionName(row.retention)) +
                             ", " + std::to_string(row.bytes) + " bytes, " +
                             std::string(writ::RuleName(row.rule)) + " " + writ::ToHex(row.digest) +
                             ")";
    if (row.state != RowState::kReceipted) {
      report->unreceipted.push_back(row.id);
      drop.push_back(row.id);
      dropped[row.location] =
          "recovery: delivery " + what + " was committed but its retained receipt never recorded";
      continue;
    }
    const bool rehash = options_.verify == VerifyOnStart::kAll || report->previous_sync_failure ||
                        (options_.verify == VerifyOnStart::kUnsynced &&
                         row.retention != RetentionClass::kPowerLoss);
    Status s = CheckPayload(row, rehash);
    if (s.code() == ErrorCode::kValidation) {
      std::string why = s.message();
      if (why.rfind(row.id + ": ", 0) == 0) why = why.substr(row.id.size() + 2);
      report->corrupt.push_back(row.id + " (" + std::string(writ::RetentionName(row.retention)) +
                                "): " + why);
      drop.push_back(row.id);
      dropped[row.location] = "recovery: delivery " + what + " is corrupt: " + why;
      continue;
    }
    if (!s.ok()) {
      // Not a verdict about the bytes (e.g. EIO): refuse to start rather than drop or trust.
      return s.Annotate("recovery cannot check delivery " + row.id);
    }
    if (rehash) ++report->verified;
    ++report->retained;
    kept_locations.insert(row.location);
  }
  // Rows first, durably; only then their files (a crash in between leaves unexplained files,
  // which the next recovery quarantines, not rows naming missing payloads).
  WRIT_RETURN_IF_ERROR(index_->Delete(drop, IndexSync::kFull, nullptr).Annotate("recovery"));
  WRIT_ASSIGN_OR_RETURN(uint64_t swept, SweepPayloads(kept_locations, dropped, report));
  if (report->previous_sync_failure) {
    WRIT_RETURN_IF_ERROR(env_->Remove(dir_ + "/" + kSyncFailedMarker).Annotate("recovery"));
    WRIT_RETURN_IF_ERROR(env_->SyncDir(dir_).Annotate("recovery"));
  }
  next_seq_.store(std::max(max_seq, swept) + 1);
  return Status::Ok();
}

Result<uint64_t> DurableStore::SweepPayloads(const std::set<std::string>& kept,
                                             const std::map<std::string, std::string>& dropped,
                                             RecoveryReport* report) {
  uint64_t max_seq = 0;
  WRIT_ASSIGN_OR_RETURN(auto quarantined, ListQuarantine(env_, dir_));
  for (const auto& q : quarantined) max_seq = std::max(max_seq, SeqOf(q.name));
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(PathOf(kPayloadDir)));
  bool removed = false;
  for (const std::string& name : names) {
    const std::string location = std::string(kPayloadDir) + "/" + name;
    max_seq = std::max(max_seq, SeqOf(name));
    if (kept.contains(location)) continue;
    const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
                     IsPayloadLocation(location.substr(0, location.size() - 4) + ".dat");
    if (tmp) {
      // Never renamed into place, so never committed: no receipt can name these bytes.
      WRIT_RETURN_IF_ERROR(env_->Remove(PathOf(location)).Annotate("recovery"));
      removed = true;
      ++report->orphans_removed;
      continue;
    }
    auto why = dropped.find(location);
    const std::string reason =
        why != dropped.end() ? why->second : "recovery: " + location + " is named by no index row";
    WRIT_RETURN_IF_ERROR(MoveToQuarantine(env_, dir_, location, reason).Annotate("recovery"));
    report->quarantined.push_back(location + ": " + reason);
  }
  if (removed) WRIT_RETURN_IF_ERROR(env_->SyncDir(PathOf(kPayloadDir)).Annotate("recovery"));
  return max_seq;
}

std::optional<std::string> DurableStore::sticky_failure() const {
  MutexLock lock(mu_);
  return sticky_;
}

void DurableStore::MarkSticky(const std::string& what) {
  {
    MutexLock lock(mu_);
    if (sticky_) return;
    sticky_ = what;
  }
  if (options_.log) {
    options_.log(
        "store: " + what +
        "; power-loss retention is refused from now on, until the receiver is restarted and "
        "its store re-checked");
  }
  // Best effort: tells the next start to re-hash everything. Not synced -- a sync just failed.
  auto fd = env_->Open(dir_ + "/" + kSyncFailedMarker, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd.ok()) {
    const std::string text = what + "\n";
    (void)env_->WriteAt(
        *fd, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
        0);
    (void)env_->Close(*fd);
  }
}

void DurableStore::NoteIndexSyncs(uint64_t failures_before, const std::string& what) {
  if (index_->sync_failures() > failures_before)
    MarkSticky("a sync of the index failed during the " + what);
}

void DurableStore::Undo(const std::string& id, const std::string& location) {
  const uint64_t before = index_->sync_failures();
  Status deleted = index_->Delete({id}, IndexSync::kNormal, nullptr);
  NoteIndexSyncs(before, "undo of " + id);
  // Without the row gone, keep the payload: the row may still name it (recovery sorts it out).
  if (deleted.ok()) (void)env_->Remove(PathOf(location));
}

Status DurableStore::Take(const std::string& id, uint64_t bytes) {
  auto fs = env_->StatFs(dir_);
  MutexLock lock(mu_);
  if (fs.ok()) {
    const uint64_t need = bytes + options_.reserve_bytes + in_flight_bytes_;
    if (need > fs->free_bytes || need < bytes) {
      return Status::Retention(
          "disk full: delivery " + id + " needs " + std::to_string(bytes) +
          " more bytes for its next window (plus " + std::to_string(options_.reserve_bytes) +
          " kept for the index) but " + dir_ + " has " + std::to_string(fs->free_bytes) +
          " bytes free, " + std::to_string(in_flight_bytes_) +
          " of them promised to deliveries in progress");
    }
  }
  in_flight_bytes_ += bytes;
  return Status::Ok();
}

void DurableStore::Release(uint64_t bytes) {
  MutexLock lock(mu_);
  in_flight_bytes_ -= std::min(in_flight_bytes_, bytes);
}

Result<std::optional<RetainedDelivery>> DurableStore::Lookup(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto row, Find(id));
  if (!row) return std::optional<RetainedDelivery>();
  RetainedDelivery d;
  d.meta = DeliveryMeta{row->id,     row->bytes,  row->chunk_size, row->rule,
                        row->digest, row->sender, false,           row->region_lengths};
  d.retention = row->retention;
  d.receipts = row->receipts;
  d.held_until_ms = row->held_until_ms;
  return std::optional<RetainedDelivery>(std::move(d));
}

Result<std::optional<RetainedDelivery>> DurableStore::LookupVerified(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto row, Find(id));
  if (!row) return std::optional<RetainedDelivery>();
  // Re-hashed within verified_for and unchanged since: that re-hash answers (an answer costs
  // a stat, not a pass over the bytes, however often anyone asks).
  if (VerifiedRecently(*row)) return Lookup(id);
  Status verified = Verify(*row);
  if (verified.code() == ErrorCode::kValidation) {
    WRIT_RETURN_IF_ERROR(QuarantineRow(*row,
                                       "re-verification before an answer from the store "
                                       "found " +
                                           verified.message()));
    return std::optional<RetainedDelivery>();
  }
  WRIT_RETURN_IF_ERROR(verified);
  return Lookup(id);
}

Status DurableStore::QuarantineRow(const IndexRow& row, const std::string& why) {
  MutexLock lock(quarantine_mu_);
  WRIT_ASSIGN_OR_RETURN(auto current, index_->Get(row.id));
  if (!current || current->location != row.location) return Status::Ok();  // done already
  const uint64_t before = index_->sync_failures();
  Status deleted = index_->Delete({row.id}, IndexSync::kFull, nullptr);
  NoteIndexSyncs(before, "quarantine of " + row.id);
  if (!deleted.ok()) {
    Log("store: " + row.id + " failed a check (" + why +
        ") but its row could not be dropped: " + deleted.message());
    return deleted;
  }
  const std::string what = row.id + " (" + std::string(writ::RetentionName(row.retention)) + ", " +
                           std::to_string(row.bytes) + " bytes, " +
                           std::string(writ::RuleName(row.rule)) + " " + writ::ToHex(row.digest) +
                           ")";
  Status moved = IsPayloadLocation(row.location)
                     ? MoveToQuarantine(env_, dir_, row.location, "delivery " + what + ": " + why)
                     : Status::Ok();  // a location the store never made: nothing of ours to move
  Log("store: delivery " + what + " is no longer retained: " + why +
      (moved.ok() ? "; its payload " + row.location + " is quarantined"
                  : "; moving its payload to the quarantine failed: " + moved.message()));
  return moved;
}

void DurableStore::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Result<std::optional<IndexRow>> DurableStore::Find(const std::string& id) {
  WRIT_ASSIGN_OR_RETURN(auto row, index_->Get(id));
  if (!row || row->state != RowState::kReceipted) return std::optional<IndexRow>();
  return row;
}

Result<std::vector<IndexRow>> DurableStore::List() {
  WRIT_ASSIGN_OR_RETURN(auto rows, index_->All());
  std::vector<IndexRow> out;
  for (auto& row : rows) {
    if (row.state == RowState::kReceipted) out.push_back(std::move(row));
  }
  return out;
}

Result<std::vector<std::string>> DurableStore::UnreferencedFiles() {
  WRIT_ASSIGN_OR_RETURN(auto rows, List());
  std::set<std::string> named;
  for (const auto& row : rows) named.insert(row.location);
  WRIT_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(PathOf(kPayloadDir)));
  std::vector<std::string> out;
  for (const auto& name : names) {
    const std::string location = std::string(kPayloadDir) + "/" + name;
    if (!named.contains(location)) out.push_back(location);
  }
  return out;
}

Result<std::unique_ptr<PayloadWriter>> DurableStore::Begin(DeliveryMeta meta,
                                                           RetentionClass retention) {
  if (!Offers(retention)) {
    return Status::Retention("the durable store does not hold " +
                             std::string(writ::RetentionName(retention)) + " deliveries");
  }
  if (options_.read_only || !options_.recover) {
    return Status::Unsupported("the store is open read-only or for maintenance");
  }
  if (retention == RetentionClass::kPowerLoss) {
    if (auto sticky = sticky_failure()) {
      return Status::Retention("power-loss retention refused: " + *sticky +
                               " earlier; restart the receiver so its store is re-checked");
    }
  }
  // A delivery that could never fit is refused at once; space is promised per window.
  auto fs = env_->StatFs(dir_);
  const uint64_t need = meta.bytes + options_.reserve_bytes;
  if (fs.ok() && (need > fs->free_bytes || need < meta.bytes)) {
    return Status::Retention("disk full: delivery " + meta.id + " needs " +
                             std::to_string(meta.bytes) + " bytes (plus " +
                             std::to_string(options_.reserve_bytes) + " kept for the index) but " +
                             dir_ + " has " + std::to_string(fs->free_bytes) + " bytes free");
  }
  const uint64_t seq = next_seq_.fetch_add(1);
  const std::string tmp = Location(seq, ".tmp");
  auto fd = env_->Open(PathOf(tmp), O_CREAT | O_EXCL | O_RDWR, 0644);
  if (!fd.ok()) {
    return Status::Retention("cannot create the payload file for " + meta.id + ": " +
                             fd.status().message());
  }
  return std::unique_ptr<PayloadWriter>(
      new DurableWriter(*this, std::move(meta), retention, seq, *fd));
}

Status DurableStore::AppendReceipt(const std::string& id, const std::string& receipt_json) {
  if (options_.read_only) return Status::Unsupported("the store is open read-only");
  WRIT_ASSIGN_OR_RETURN(auto row, index_->Get(id));
  if (!row) return Status::NotFound("no delivery " + id + " in the durable store");
  const bool first = row->state == RowState::kCommitted;
  const bool power = row->retention == RetentionClass::kPowerLoss;
  if (power && first) {
    if (auto sticky = sticky_failure()) {
      Undo(id, row->location);
      return Status::Retention("power-loss retention of " + id + " refused: " + *sticky);
    }
  }
  const uint64_t before = index_->sync_failures();
  Status s = index_->AppendReceipt(id, receipt_json, power ? IndexSync::kFull : IndexSync::kNormal,
                                   nullptr);
  NoteIndexSyncs(before, "commit of the retained receipt of " + id);
  if (!s.ok()) {
    if (first) Undo(id, row->location);
    return Status::Retention("recording the receipt of " + id + " failed: " + s.message());
  }
  return Status::Ok();
}

Status DurableStore::Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) {
  WRIT_ASSIGN_OR_RETURN(auto row, Find(id));
  if (!row) return Status::NotFound("no retained delivery " + id);
  if (offset > row->bytes || out.size() > row->bytes - offset) {
    return Status::InvalidArgument("read past the end of delivery " + id);
  }
  WRIT_ASSIGN_OR_RETURN(int fd, OpenPayload(*row));
  Status s = env_->ReadAt(fd, out, offset);
  (void)env_->Close(fd);
  return s;
}

Result<Removal> DurableStore::Remove(const std::string& id, bool force, uint64_t now_ms) {
  if (options_.read_only) return Status::Unsupported("the store is open read-only");
  MutexLock lock(quarantine_mu_);  // one removal or quarantine of a row at a time
  WRIT_ASSIGN_OR_RETURN(auto row, Find(id));
  if (!row) return Status::NotFound("no retained delivery " + id + " in " + dir_);
  Removal removal{id, row->retention, row->bytes, row->held_until_ms, false, ""};
  WRIT_RETURN_IF_ERROR(
      CheckRemovable(id, row->held_until_ms, now_ms, force, &removal.promise_broken));
  const uint64_t before = index_->sync_failures();
  Status deleted = index_->Delete({id}, IndexSync::kFull, nullptr);
  NoteIndexSyncs(before, "removal of " + id);
  {
    MutexLock stamps(stamps_mu_);
    stamps_.erase(id);
  }
  if (!deleted.ok()) {
    const std::string why = deleted.message();
    return Status::Retention("removing " + id + " failed; it is still held: " + why);
  }
  // Dropped: nothing answers for it now. Its bytes go next; if that fails, the next
  // recovery quarantines the file no row names.
  if (!IsPayloadLocation(row->location)) return removal;  // never a file the store did not make
  Status unlinked = env_->Remove(PathOf(row->location));
  if (!unlinked.ok() && unlinked.sys_errno() != ENOENT) {
    removal.note = "unlinking its payload " + row->location + " failed (" + unlinked.message() +
                   "); the next start quarantines it";
    return removal;
  }
  Status synced = env_->SyncDir(PathOf(kPayloadDir));
  if (!synced.ok()) {
    MarkSticky("fsync of directory " + std::string(kPayloadDir) + "/ failed (" + synced.message() +
               ")");
    removal.note = "fsync of payloads/ after the unlink failed (" + synced.message() +
                   "): after a power loss the file may come back, and the next start "
                   "quarantines it";
  }
  return removal;
}

Result<std::vector<std::string>> DurableStore::Expired(uint64_t now_ms) {
  return index_->Expired(now_ms);
}

}  // namespace writ::store
