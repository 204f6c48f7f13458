// The durable store's index: one SQLite database (WAL mode) in the data
// directory, one row per delivery: id, bytes, chunk size, rule, digest,
// retention class, payload location, receipts (a JSON array of the receipts'
// canonical JSON), state and commit time.
//
// A row is `committed` when the payload is in place and the row inserted, and
// `receipted` once the retained receipt itself is in the row. Only receipted
// rows are retained deliveries; recovery drops committed-only rows (no
// retained receipt can have been sent for them).
//
// Durability per commit: synchronous=FULL (the WAL is synced before COMMIT
// returns) for power-loss, synchronous=NORMAL for process-restart (the WAL is
// written to the OS, not synced; checkpoints still sync, so a checkpoint run by
// a process-restart commit can never undo the durability of an earlier
// power-loss row -- with synchronous=OFF it could, because an unsynced
// checkpoint may let the WAL be reset before the database file is durable).
//
// SQLite does its own I/O. A VFS shim (registered per index) passes every
// write, truncate and sync of the index files to Env::BeforeIndexIo first and
// records each sync's result, which the store puts in the receipt's evidence.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "store/env.h"
#include "writ/status.h"
#include "writ/types.h"

struct sqlite3;
struct sqlite3_stmt;

namespace writ::store {

enum class RowState { kCommitted, kReceipted };

struct IndexRow {
  std::string id;
  uint64_t bytes = 0;
  uint64_t chunk_size = 0;
  Rule rule = Rule::kXxh3_128;
  std::vector<uint8_t> digest;
  RetentionClass retention = RetentionClass::kProcessRestart;
  std::string location;  // relative to the data directory, e.g. "payloads/p000000000000002a.dat"
  std::vector<std::string> receipts;
  RowState state = RowState::kCommitted;
  std::string committed_at;    // RFC 3339, UTC
  std::string sender;          // key id of the authenticated sender that delivered it, or ''
  uint64_t held_until_ms = 0;  // its time-to-live ends then (Unix ms); 0: none promised
  // Not a column: Insert may replace a receipted row of the same digest in a weaker class.
  bool supersedes_weaker = false;
  std::vector<uint64_t> region_lengths;  // a scatter-gather delivery's regions; empty: plain
};

enum class IndexSync { kNormal, kFull };

// One sync of an index file SQLite made during a transaction, and its result.
struct IndexSyncCall {
  std::string file;  // "index.db-wal"
  bool ok = false;
  std::string result;  // "ok" or the error
};

// What one index transaction did.
struct IndexCommit {
  IndexSync mode = IndexSync::kNormal;
  std::vector<IndexSyncCall> syncs;
  std::string Describe() const;
};

class Index {
 public:
  // Opens (creating unless read_only) `path`. *created tells whether the file was new.
  static Result<std::unique_ptr<Index>> Open(const std::string& path, Env* env, bool read_only,
                                             bool* created);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  Result<std::optional<IndexRow>> Get(const std::string& id);
  Result<std::vector<IndexRow>> All();

  // Inserts `row` as committed in one transaction. An existing receipted row for the id is
  // a conflict (Refused), unless `row` supersedes_weaker and that row has the same digest in
  // a weaker class: then `row` replaces it, receipted (its bytes are already as safe as the
  // replaced row's promise). An existing committed-only row (a failed earlier attempt) is
  // replaced. Either way the replaced row's location is returned in *replaced_location.
  Status Insert(const IndexRow& row, IndexSync mode, IndexCommit* commit,
                std::string* replaced_location);
  // Appends a receipt and marks the row receipted, in one transaction.
  Status AppendReceipt(const std::string& id, const std::string& receipt_json, IndexSync mode,
                       IndexCommit* commit);
  // Ids of receipted rows whose held_until_ms is set and not after `now_ms`.
  Result<std::vector<std::string>> Expired(uint64_t now_ms);
  // Deletes rows in one transaction.
  Status Delete(const std::vector<std::string>& ids, IndexSync mode, IndexCommit* commit);

  // Syncs of the index files that failed since Open (commits, checkpoints, anything).
  uint64_t sync_failures() const;
  const std::string& path() const { return path_; }

  // Called by the VFS shim, from inside SQLite calls made under mu_.
  void OnSync(const std::string& file, int rc) REQUIRES(mu_);
  Env* env() const { return env_; }

 private:
  Index(std::string path, Env* env);
  Status Exec(const char* sql) REQUIRES(mu_);
  bool HasColumn(const char* column) REQUIRES(mu_);
  Status CreateSchema() REQUIRES(mu_);
  Status Fail(const char* what, int rc) REQUIRES(mu_);
  Status Transaction(IndexSync mode, IndexCommit* commit, const std::function<Status()>& body)
      REQUIRES(mu_);

  std::string path_;
  Env* env_;
  sqlite3* db_ GUARDED_BY(mu_) = nullptr;
  struct Shim;
  std::unique_ptr<Shim> shim_;
  mutable Mutex mu_;
  IndexCommit* recording_ GUARDED_BY(mu_) = nullptr;  // the commit whose syncs are being recorded
  std::atomic<uint64_t> sync_failures_{0};
  bool has_sender_ GUARDED_BY(mu_) = false;  // the index has the sender column (older ones do not)
  bool has_held_until_ GUARDED_BY(mu_) = false;  // the index has the held_until_ms column
  bool has_regions_ GUARDED_BY(mu_) = false;     // and the regions column
  sqlite3_stmt* get_ GUARDED_BY(mu_) = nullptr;  // Get's statement, prepared on first use
};

std::string RowStateName(RowState state);
std::string NowRfc3339Utc();

}  // namespace writ::store
