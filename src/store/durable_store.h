// The durable store behind `writ serve --data DIR`: payloads in files under
// DIR/payloads, an index in SQLite (DIR/index.db, WAL). It offers the
// `process-restart` and `power-loss` classes; docs/retention.md has the exact
// sync sequence of each, recovery and the sticky sync failure.
//
// Every file-system call goes through an Env (env.h); the index's own I/O goes
// through SQLite, watched by a VFS shim (index.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "store/dir_lock.h"
#include "store/env.h"
#include "store/index.h"
#include "store/store.h"

namespace writ::store {

class Scrubber;

// Which payloads recovery re-hashes against their digest at start.
enum class VerifyOnStart {
  kAll,       // every retained delivery
  kUnsynced,  // process-restart deliveries (never synced; a power cut may have torn them), and
              // everything after a sync failure; power-loss payloads get a size check
  kNone,      // presence and size only
};
std::string_view VerifyOnStartName(VerifyOnStart mode);
Result<VerifyOnStart> ParseVerifyOnStart(std::string_view name);

// What the background scrub found for one retained delivery (DurableOptions::scrubbed).
enum class ScrubFinding : uint8_t { kPassed, kQuarantined, kUnreadable };

struct DurableOptions {
  std::shared_ptr<Env> env;  // nullptr: Env::Default()
  VerifyOnStart verify = VerifyOnStart::kUnsynced;
  // Offline access (`writ store ls|cat|check`): no recovery, nothing written, Begin refused.
  bool read_only = false;
  // Told about events a log should show: sync failures (the store turning sticky).
  std::function<void(const std::string&)> log;
  // Free space kept beyond a delivery's bytes (index growth) when admitting it.
  uint64_t reserve_bytes = 1 << 20;
  // The background scrub's rate (scrubber.h), bytes per second; 0: no scrub.
  uint64_t scrub_bytes_per_second = 0;
  // Time-to-live of the process-restart and power-loss classes (lifecycle.h); a class
  // missing here is held until removed.
  TtlPolicy ttl;
  // false: open for one maintenance command (`writ store rm`): the lock is taken, nothing
  // is recovered, no scrub, Begin refused.
  bool recover = true;
  // Told each scrub finding (for metrics), from the scrub's thread.
  std::function<void(ScrubFinding)> scrubbed;
  // How long a payload's re-hash (by an answer or the scrub) stands for later answers, while
  // its file is the same version (inode, size, mtime, ctime). 0: every answer re-hashes.
  std::chrono::milliseconds verified_for = std::chrono::minutes(10);
};

// What recovery found and did at start.
struct RecoveryReport {
  std::string data_dir;
  std::string filesystem;
  VerifyOnStart verify = VerifyOnStart::kUnsynced;
  bool previous_sync_failure = false;    // the SYNC-FAILED marker was found: everything re-hashed
  uint64_t retained = 0;                 // deliveries reported retained from now on
  uint64_t verified = 0;                 // of those, re-hashed against their digest
  uint64_t orphans_removed = 0;          // .tmp files: half-written, never committed, removed
  std::vector<std::string> corrupt;      // "ID: why", dropped: never reported retained
  std::vector<std::string> unreceipted;  // IDs committed without a retained receipt, dropped
  // "payloads/NAME: why", moved to the quarantine: the payloads of corrupt and unreceipted
  // rows, and files no row names (other than .tmp ones). Never deleted by the store.
  std::vector<std::string> quarantined;
  // One summary line, then one line per dropped delivery.
  std::vector<std::string> Lines() const;
};

class DurableStore : public Store {
 public:
  static Result<std::unique_ptr<DurableStore>> Open(const std::string& dir, DurableOptions options,
                                                    RecoveryReport* report = nullptr);
  ~DurableStore() override;

  bool Offers(RetentionClass retention) const override {
    return retention == RetentionClass::kProcessRestart || retention == RetentionClass::kPowerLoss;
  }
  Result<std::optional<RetainedDelivery>> Lookup(const std::string& id) override;
  // Lookup after re-hashing the payload; one that fails is quarantined and reported absent.
  Result<std::optional<RetainedDelivery>> LookupVerified(const std::string& id) override;
  Result<std::unique_ptr<PayloadWriter>> Begin(DeliveryMeta meta,
                                               RetentionClass retention) override;
  Status AppendReceipt(const std::string& id, const std::string& receipt_json) override;
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override;
  // The row first (synchronous=FULL), then the payload's unlink and fsync(payloads/): a
  // crash in between leaves a payload no row names (the next recovery quarantines it),
  // never a row naming a missing payload; a failed index sync leaves it held.
  Result<Removal> Remove(const std::string& id, bool force, uint64_t now_ms) override;
  Result<std::vector<std::string>> Expired(uint64_t now_ms) override;

  // Retained (receipted) deliveries, oldest first.
  Result<std::vector<IndexRow>> List();
  // A retained delivery, or nullopt.
  Result<std::optional<IndexRow>> Find(const std::string& id);
  // Passes the delivery's bytes to `sink` in order while hashing them; Validation when the
  // bytes are missing, short, long or do not have the row's digest (after the sink saw them).
  Status Stream(const IndexRow& row, const std::function<Status(std::span<const uint8_t>)>& sink);
  // Re-hashes one delivery: Ok, or Validation naming the mismatch (Io for other failures).
  // An Ok re-hash stamps the payload's file version as verified (VerifiedRecently).
  Status Verify(const IndexRow& row);
  // Stream, stamping the payload as Verify does; the scrub's re-hash.
  Status StreamAndStamp(const IndexRow& row,
                        const std::function<Status(std::span<const uint8_t>)>& sink);
  // Whether `row`'s payload was re-hashed within DurableOptions::verified_for and its file is
  // still the version that was (what an answer from the store may skip a re-hash for).
  bool VerifiedRecently(const IndexRow& row);
  // Payloads re-hashed so far by Verify and StreamAndStamp (for tests and metrics).
  uint64_t rehashes() const { return rehashes_.load(); }
  // Payload files no retained delivery names (e.g. left by a crash while receiving).
  Result<std::vector<std::string>> UnreferencedFiles();
  // Drops the row of a retained delivery whose payload failed a check, durably, then moves
  // the payload to the quarantine, and logs it. Nothing when the row is no longer there
  // (someone else quarantined it first).
  Status QuarantineRow(const IndexRow& row, const std::string& why);
  // Tells the store's log (DurableOptions::log), if any.
  void Log(const std::string& line) const;
  // Tells DurableOptions::scrubbed, if any.
  void NoteScrubbed(ScrubFinding finding) const {
    if (options_.scrubbed) options_.scrubbed(finding);
  }

  // Set once a sync failed: power-loss retention is refused until restart.
  std::optional<std::string> sticky_failure() const;
  const std::string& dir() const { return dir_; }
  const FsInfo& filesystem() const { return fs_; }

 private:
  friend class DurableWriter;
  DurableStore(std::string dir, DurableOptions options);
  // Creates a fresh directory, or checks that an initialised one has its index and payloads;
  // takes the lock unless read-only.
  Status PrepareDirectory();
  Status Recover(RecoveryReport* report);
  // Recovery's second half: every payload file no kept row names is quarantined (.tmp ones,
  // never committed, are removed). Returns the highest sequence number seen.
  Result<uint64_t> SweepPayloads(const std::set<std::string>& kept,
                                 const std::map<std::string, std::string>& dropped,
                                 RecoveryReport* report);
  // Checks a payload without trusting it: NotFound/Validation are "corrupt", Io is not.
  Status CheckPayload(const IndexRow& row, bool rehash);
  // Opens a row's payload for reading: never a location the store did not make, never
  // through a symbolic link. Validation when it is missing or refused.
  Result<int> OpenPayload(const IndexRow& row);
  void MarkSticky(const std::string& what);
  void NoteIndexSyncs(uint64_t failures_before, const std::string& what);
  // Removes the row and (if that worked) its payload, after a failed commit or receipt.
  void Undo(const std::string& id, const std::string& location);
  std::string PathOf(const std::string& location) const { return dir_ + "/" + location; }
  std::string Location(uint64_t seq, const char* suffix) const;
  // Promises `bytes` of disk to a delivery in progress (kRetention "disk full" if they do
  // not fit beside what is promised already); Release gives them back.
  Status Take(const std::string& id, uint64_t bytes);
  void Release(uint64_t bytes);

  std::string dir_;
  DurableOptions options_;
  Env* env_;
  FsInfo fs_;
  std::unique_ptr<Index> index_;
  std::atomic<uint64_t> next_seq_{1};
  mutable Mutex mu_;
  Mutex quarantine_mu_;  // one quarantine at a time (scrub and answers may race)
  std::optional<std::string> sticky_ GUARDED_BY(mu_);
  uint64_t in_flight_bytes_ GUARDED_BY(mu_) = 0;
  std::unique_ptr<DirLock> lock_;
  // The file version of each payload when it last re-hashed clean, and when.
  struct VerifiedStamp {
    std::string location;
    FileInfo version;
    std::chrono::steady_clock::time_point at;
  };
  Mutex stamps_mu_;
  std::map<std::string, VerifiedStamp> stamps_ GUARDED_BY(stamps_mu_);
  std::atomic<uint64_t> rehashes_{0};
  std::unique_ptr<Scrubber> scrubber_;  // last: stopped first
};

// Whether `location` is one the store itself makes: "payloads/p" + 16 hex digits + ".dat".
// Anything else in the index (e.g. "../../etc/passwd") is never opened.
bool IsPayloadLocation(const std::string& location);

inline constexpr const char* kPayloadDir = "payloads";
inline constexpr const char* kIndexFile = "index.db";
inline constexpr const char* kSyncFailedMarker = "SYNC-FAILED";

}  // namespace writ::store
