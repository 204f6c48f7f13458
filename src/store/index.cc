#include "store/index.h"

#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <new>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "store/regions.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::store {
namespace {

std::string Basename(const char* path) {
  if (path == nullptr) return "(temporary)";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// SQLite's result for an Env error: a full disk stays SQLITE_FULL so the caller can name it.
int SqliteCodeFor(const Status& status, int io_error) {
  return status.sys_errno() == ENOSPC || status.sys_errno() == EDQUOT ? SQLITE_FULL : io_error;
}

// ---- the VFS shim ---------------------------------------------------------------------------

struct ShimFile {
  sqlite3_file base;
  Index* owner;
  char name[128];  // basename, for messages and evidence
  sqlite3_file* real;
};

constexpr int kShimHeader = (sizeof(ShimFile) + 15) & ~15;

ShimFile* Shim(sqlite3_file* f) { return reinterpret_cast<ShimFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Shim(f)->real; }

int ShimClose(sqlite3_file* f) {
  sqlite3_file* real = Real(f);
  return real->pMethods ? real->pMethods->xClose(real) : SQLITE_OK;
}
int ShimRead(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, amt, off);
}
int ShimWrite(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  ShimFile* s = Shim(f);
  Status allowed = s->owner->env()->BeforeIndexIo(IndexIo::kWrite, s->name);
  if (!allowed.ok()) return SqliteCodeFor(allowed, SQLITE_IOERR_WRITE);
  return s->real->pMethods->xWrite(s->real, buf, amt, off);
}
int ShimTruncate(sqlite3_file* f, sqlite3_int64 size) {
  ShimFile* s = Shim(f);
  Status allowed = s->owner->env()->BeforeIndexIo(IndexIo::kTruncate, s->name);
  if (!allowed.ok()) return SqliteCodeFor(allowed, SQLITE_IOERR_TRUNCATE);
  return s->real->pMethods->xTruncate(s->real, size);
}
// SQLite syncs only inside a call the Index makes holding its mu_.
int ShimSync(sqlite3_file* f, int flags) NO_THREAD_SAFETY_ANALYSIS {
  ShimFile* s = Shim(f);
  Status allowed = s->owner->env()->BeforeIndexIo(IndexIo::kSync, s->name);
  int rc = allowed.ok() ? s->real->pMethods->xSync(s->real, flags) : SQLITE_IOERR_FSYNC;
  s->owner->OnSync(s->name, rc);
  return rc;
}
int ShimFileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int ShimLock(sqlite3_file* f, int lock) { return Real(f)->pMethods->xLock(Real(f), lock); }
int ShimUnlock(sqlite3_file* f, int lock) { return Real(f)->pMethods->xUnlock(Real(f), lock); }
int ShimCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int ShimFileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int ShimSectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int ShimDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShimShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  return m->iVersion >= 2 && m->xShmMap ? m->xShmMap(Real(f), region, size, extend, out)
                                        : SQLITE_IOERR;
}
int ShimShmLock(sqlite3_file* f, int offset, int n, int flags) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  return m->iVersion >= 2 && m->xShmLock ? m->xShmLock(Real(f), offset, n, flags) : SQLITE_IOERR;
}
void ShimShmBarrier(sqlite3_file* f) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  if (m->iVersion >= 2 && m->xShmBarrier) m->xShmBarrier(Real(f));
}
int ShimShmUnmap(sqlite3_file* f, int del) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  return m->iVersion >= 2 && m->xShmUnmap ? m->xShmUnmap(Real(f), del) : SQLITE_OK;
}
int ShimFetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** pp) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  if (m->iVersion >= 3 && m->xFetch) return m->xFetch(Real(f), off, amt, pp);
  *pp = nullptr;
  return SQLITE_OK;
}
int ShimUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  const sqlite3_io_methods* m = Real(f)->pMethods;
  return m->iVersion >= 3 && m->xUnfetch ? m->xUnfetch(Real(f), off, p) : SQLITE_OK;
}

const sqlite3_io_methods kShimMethods = {
    3,
    ShimClose,
    ShimRead,
    ShimWrite,
    ShimTruncate,
    ShimSync,
    ShimFileSize,
    ShimLock,
    ShimUnlock,
    ShimCheckReservedLock,
    ShimFileControl,
    ShimSectorSize,
    ShimDeviceCharacteristics,
    ShimShmMap,
    ShimShmLock,
    ShimShmBarrier,
    ShimShmUnmap,
    ShimFetch,
    ShimUnfetch,
};

}  // namespace

struct Index::Shim {
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  Index* owner = nullptr;
  std::string name;

  static Shim* Of(sqlite3_vfs* v) { return static_cast<Shim*>(v->pAppData); }

  static int Open(sqlite3_vfs* v, sqlite3_filename name, sqlite3_file* f, int flags,
                  int* out_flags) {
    Shim* shim = Of(v);
    ShimFile* s = reinterpret_cast<ShimFile*>(f);
    s->base.pMethods = nullptr;
    s->owner = shim->owner;
    const std::string base = Basename(name);
    std::snprintf(s->name, sizeof s->name, "%s", base.c_str());
    s->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kShimHeader);
    s->real->pMethods = nullptr;
    const int rc = shim->real->xOpen(shim->real, name, s->real, flags, out_flags);
    if (s->real->pMethods != nullptr) s->base.pMethods = &kShimMethods;
    return rc;
  }
  static int Delete(sqlite3_vfs* v, const char* name, int sync_dir) {
    return Of(v)->real->xDelete(Of(v)->real, name, sync_dir);
  }
  static int Access(sqlite3_vfs* v, const char* name, int flags, int* out) {
    return Of(v)->real->xAccess(Of(v)->real, name, flags, out);
  }
  static int FullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
    return Of(v)->real->xFullPathname(Of(v)->real, name, n, out);
  }
  static void* DlOpen(sqlite3_vfs* v, const char* name) {
    return Of(v)->real->xDlOpen(Of(v)->real, name);
  }
  static void DlError(sqlite3_vfs* v, int n, char* out) {
    Of(v)->real->xDlError(Of(v)->real, n, out);
  }
  static void (*DlSym(sqlite3_vfs* v, void* h, const char* sym))(void) {
    return Of(v)->real->xDlSym(Of(v)->real, h, sym);
  }
  static void DlClose(sqlite3_vfs* v, void* h) { Of(v)->real->xDlClose(Of(v)->real, h); }
  static int Randomness(sqlite3_vfs* v, int n, char* out) {
    return Of(v)->real->xRandomness(Of(v)->real, n, out);
  }
  static int Sleep(sqlite3_vfs* v, int us) { return Of(v)->real->xSleep(Of(v)->real, us); }
  static int CurrentTime(sqlite3_vfs* v, double* out) {
    return Of(v)->real->xCurrentTime(Of(v)->real, out);
  }
  static int GetLastError(sqlite3_vfs* v, int n, char* out) {
    return Of(v)->real->xGetLastError(Of(v)->real, n, out);
  }
  static int CurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* out) {
    sqlite3_vfs* r = Of(v)->real;
    if (r->iVersion >= 2 && r->xCurrentTimeInt64) return r->xCurrentTimeInt64(r, out);
    double now = 0;
    const int rc = r->xCurrentTime(r, &now);
    *out = static_cast<sqlite3_int64>(now * 86400000.0);
    return rc;
  }
};

std::string RowStateName(RowState state) {
  return state == RowState::kReceipted ? "receipted" : "committed";
}

std::string NowRfc3339Utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string IndexCommit::Describe() const {
  std::string out = std::string("one SQLite transaction in WAL mode with synchronous=") +
                    (mode == IndexSync::kFull ? "FULL" : "NORMAL");
  if (syncs.empty()) {
    out += ", no sync of the index files";
    out += mode == IndexSync::kFull ? "" : " (written to the OS only)";
    return out;
  }
  out += ", SQLite's sync calls: ";
  for (size_t i = 0; i < syncs.size(); ++i) {
    if (i) out += ", ";
    out += "xSync(" + syncs[i].file + ") = " + syncs[i].result;
  }
  return out;
}

Result<std::unique_ptr<Index>> Index::Open(const std::string& path, Env* env, bool read_only,
                                           bool* created) {
  auto index = std::unique_ptr<Index>(new Index(path, env));
  auto existing = env->Stat(path);
  if (!existing.ok() && existing.status().code() != ErrorCode::kNotFound) return existing.status();
  if (created) *created = !existing.ok();
  if (read_only && !existing.ok()) {
    return Status::NotFound(path + " does not exist: not a writ data directory");
  }

  static std::atomic<uint64_t> next_vfs{0};
  auto shim = std::make_unique<Shim>();
  shim->real = sqlite3_vfs_find(nullptr);
  if (shim->real == nullptr) return Status::Internal("SQLite has no default VFS");
  shim->owner = index.get();
  shim->name = "writ-index-" + std::to_string(next_vfs.fetch_add(1));
  sqlite3_vfs& v = shim->vfs;
  v.iVersion = 2;
  v.szOsFile = kShimHeader + shim->real->szOsFile;
  v.mxPathname = shim->real->mxPathname;
  v.zName = shim->name.c_str();
  v.pAppData = shim.get();
  v.xOpen = &Shim::Open;
  v.xDelete = &Shim::Delete;
  v.xAccess = &Shim::Access;
  v.xFullPathname = &Shim::FullPathname;
  v.xDlOpen = &Shim::DlOpen;
  v.xDlError = &Shim::DlError;
  v.xDlSym = &Shim::DlSym;
  v.xDlClose = &Shim::DlClose;
  v.xRandomness = &Shim::Randomness;
  v.xSleep = &Shim::Sleep;
  v.xCurrentTime = &Shim::CurrentTime;
  v.xGetLastError = &Shim::GetLastError;
  v.xCurrentTimeInt64 = &Shim::CurrentTimeInt64;
  if (int rc = sqlite3_vfs_register(&v, 0); rc != SQLITE_OK) {
    return Status::Internal(std::string("sqlite3_vfs_register: ") + sqlite3_errstr(rc));
  }
  index->shim_ = std::move(shim);

  MutexLock lock(index->mu_);  // not shared yet: held for the analysis's sake
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &index->db_, flags, index->shim_->name.c_str());
  if (rc != SQLITE_OK) {
    Status s = Status::Io("cannot open the index " + path + ": " +
                          (index->db_ ? sqlite3_errmsg(index->db_) : sqlite3_errstr(rc)));
    return s;
  }
  sqlite3_extended_result_codes(index->db_, 1);
  sqlite3_busy_timeout(index->db_, 10000);
  if (read_only) {
    // Fail now, naming the problem, if this is not a writ index.
    sqlite3_stmt* st = nullptr;
    const int prc =
        sqlite3_prepare_v2(index->db_, "SELECT count(*) FROM deliveries", -1, &st, nullptr);
    int src = prc == SQLITE_OK ? sqlite3_step(st) : prc;
    sqlite3_finalize(st);
    if (src != SQLITE_ROW) {
      return Status::Io("cannot read the index " + path + ": " + sqlite3_errmsg(index->db_));
    }
    index->has_sender_ = index->HasColumn("sender");
    index->has_held_until_ = index->HasColumn("held_until_ms");
    index->has_regions_ = index->HasColumn("regions");
    return index;
  }
  WRIT_RETURN_IF_ERROR(index->CreateSchema());
  return index;
}

// The tables of a writ index, created when missing, and columns added since version 1.
Status Index::CreateSchema() {
  WRIT_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  WRIT_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  WRIT_RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS deliveries ("
           " id TEXT PRIMARY KEY NOT NULL,"
           " bytes INTEGER NOT NULL,"
           " chunk_size INTEGER NOT NULL,"
           " rule TEXT NOT NULL,"
           " digest TEXT NOT NULL,"
           " retention TEXT NOT NULL,"
           " location TEXT NOT NULL,"
           " receipts TEXT NOT NULL,"
           " state TEXT NOT NULL,"
           " committed_at TEXT NOT NULL)"));
  WRIT_RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)"));
  WRIT_RETURN_IF_ERROR(
      Exec("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', 'writ.store/1')"));
  // Added later: which authenticated sender delivered the bytes (rows from before say '').
  if (!HasColumn("sender")) {
    WRIT_RETURN_IF_ERROR(Exec("ALTER TABLE deliveries ADD COLUMN sender TEXT NOT NULL DEFAULT ''"));
  }
  has_sender_ = true;
  // Added later: the end of the delivery's time-to-live (Unix ms; rows from before: 0, none).
  if (!HasColumn("held_until_ms")) {
    WRIT_RETURN_IF_ERROR(
        Exec("ALTER TABLE deliveries ADD COLUMN held_until_ms INTEGER NOT NULL DEFAULT 0"));
  }
  has_held_until_ = true;
  // The expiry sweep asks every second: a partial index keeps that cheap however many rows
  // hold no time-to-live (it holds only the rows that do).
  WRIT_RETURN_IF_ERROR(
      Exec("CREATE INDEX IF NOT EXISTS deliveries_held_until ON deliveries(held_until_ms)"
           " WHERE held_until_ms > 0"));
  // Added later: a scatter-gather delivery's region lengths ("4096,0,8192"; '' for plain).
  if (!HasColumn("regions")) {
    WRIT_RETURN_IF_ERROR(
        Exec("ALTER TABLE deliveries ADD COLUMN regions TEXT NOT NULL DEFAULT ''"));
  }
  has_regions_ = true;
  return Status::Ok();
}

Index::Index(std::string path, Env* env) : path_(std::move(path)), env_(env) {}

bool Index::HasColumn(const char* column) {
  sqlite3_stmt* st = nullptr;
  bool found = false;
  if (sqlite3_prepare_v2(db_, "PRAGMA table_info(deliveries)", -1, &st, nullptr) == SQLITE_OK) {
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
      const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      found = name != nullptr && std::string(name) == column;
    }
  }
  sqlite3_finalize(st);
  return found;
}

Index::~Index() {
  if (db_ != nullptr) {
    MutexLock lock(mu_);
    sqlite3_finalize(get_);
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
  if (shim_) sqlite3_vfs_unregister(&shim_->vfs);
}

void Index::OnSync(const std::string& file, int rc) {
  if (rc != SQLITE_OK) sync_failures_.fetch_add(1);
  if (recording_ != nullptr) {
    IndexSyncCall call;
    call.file = file;
    call.ok = rc == SQLITE_OK;
    call.result = rc == SQLITE_OK ? "ok" : std::string("failed (") + sqlite3_errstr(rc) + ")";
    recording_->syncs.push_back(std::move(call));
  }
}

uint64_t Index::sync_failures() const { return sync_failures_.load(); }

Status Index::Fail(const char* what, int rc) {
  const std::string msg = std::string("index ") + path_ + ": " + what + ": " + sqlite3_errmsg(db_);
  const int primary = rc & 0xFF;
  if (primary == SQLITE_FULL) return Status::Io(msg + " (disk full)", ENOSPC);
  if (primary == SQLITE_CONSTRAINT) return Status::Refused(msg);
  if (primary == SQLITE_IOERR) return Status::Io(msg, EIO);
  return Status::Io(msg);
}

Status Index::Exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  if (rc != SQLITE_OK) return Fail(sql, rc);
  return Status::Ok();
}

namespace {

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr); }
  // One prepared once and kept by its owner (Index::Get): reset on scope exit, not finalized.
  explicit Stmt(sqlite3_stmt* kept) : st_(kept), kept_(true) {}
  ~Stmt() {
    if (!kept_) {
      sqlite3_finalize(st_);
      return;
    }
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  int prepared() const { return rc_; }
  sqlite3_stmt* get() { return st_; }
  void Text(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void Int(int i, uint64_t v) { sqlite3_bind_int64(st_, i, static_cast<sqlite3_int64>(v)); }
  std::string Col(int i) {
    const unsigned char* t = sqlite3_column_text(st_, i);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(st_, i)))
             : std::string();
  }
  uint64_t ColInt(int i) { return static_cast<uint64_t>(sqlite3_column_int64(st_, i)); }

 private:
  sqlite3_stmt* st_ = nullptr;
  int rc_ = SQLITE_OK;
  bool kept_ = false;
};

// An index opened read-only from before the sender, held_until_ms or regions column reads
// '', 0 or '' for it.
std::string SelectRows(bool has_sender, bool has_held_until, bool has_regions) {
  return std::string(
             "SELECT id, bytes, chunk_size, rule, digest, retention, location, receipts, state, "
             "committed_at, ") +
         (has_sender ? "sender" : "''") + ", " + (has_held_until ? "held_until_ms" : "0") + ", " +
         (has_regions ? "regions" : "''") + " FROM deliveries";
}

Result<IndexRow> RowFrom(Stmt& st) {
  IndexRow row;
  row.id = st.Col(0);
  row.bytes = st.ColInt(1);
  row.chunk_size = st.ColInt(2);
  WRIT_ASSIGN_OR_RETURN(row.rule, writ::ParseRule(st.Col(3)));
  WRIT_ASSIGN_OR_RETURN(row.digest, writ::FromHex(st.Col(4)));
  WRIT_ASSIGN_OR_RETURN(row.retention, writ::ParseRetention(st.Col(5)));
  row.location = st.Col(6);
  auto receipts = nlohmann::json::parse(st.Col(7), nullptr, false);
  if (!receipts.is_array())
    return Status::Malformed("receipts of " + row.id + " are not a JSON array");
  for (const auto& r : receipts) {
    if (!r.is_string()) return Status::Malformed("a receipt of " + row.id + " is not a string");
    row.receipts.push_back(r.get<std::string>());
  }
  const std::string state = st.Col(8);
  if (state == "receipted")
    row.state = RowState::kReceipted;
  else if (state == "committed")
    row.state = RowState::kCommitted;
  else
    return Status::Malformed("row " + row.id + " has unknown state '" + state + "'");
  row.committed_at = st.Col(9);
  row.sender = st.Col(10);
  row.held_until_ms = st.ColInt(11);
  WRIT_ASSIGN_OR_RETURN(row.region_lengths, DecodeRegionLengths(st.Col(12)));
  return row;
}

std::string ReceiptsJson(const std::vector<std::string>& receipts) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : receipts) arr.push_back(r);
  return arr.dump();
}

}  // namespace

Result<std::optional<IndexRow>> Index::Get(const std::string& id) {
  MutexLock lock(mu_);
  // Asked for every announce and every receipt recorded: parsed once, not per call.
  if (get_ == nullptr) {
    const std::string sql =
        SelectRows(has_sender_, has_held_until_, has_regions_) + " WHERE id = ?1";
    const int prepared = sqlite3_prepare_v2(db_, sql.c_str(), -1, &get_, nullptr);
    if (prepared != SQLITE_OK) return Fail("select", prepared);
  }
  Stmt st(get_);
  st.Text(1, id);
  const int rc = sqlite3_step(st.get());
  if (rc == SQLITE_DONE) return std::optional<IndexRow>();
  if (rc != SQLITE_ROW) return Fail("select", rc);
  auto row = RowFrom(st);
  if (!row.ok()) return row.status().Annotate("index " + path_);
  return std::optional<IndexRow>(std::move(row).value());
}

Result<std::vector<IndexRow>> Index::All() {
  MutexLock lock(mu_);
  Stmt st(db_,
          (SelectRows(has_sender_, has_held_until_, has_regions_) + " ORDER BY committed_at, id")
              .c_str());
  if (st.prepared() != SQLITE_OK) return Fail("select", st.prepared());
  std::vector<IndexRow> rows;
  for (;;) {
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Fail("select", rc);
    auto row = RowFrom(st);
    if (!row.ok()) return row.status().Annotate("index " + path_);
    rows.push_back(std::move(row).value());
  }
  return rows;
}

Status Index::Transaction(IndexSync mode, IndexCommit* commit,
                          const std::function<Status()>& body) {
  // Caller holds mu_.
  IndexCommit local;
  IndexCommit* rec = commit ? commit : &local;
  rec->mode = mode;
  rec->syncs.clear();
  WRIT_RETURN_IF_ERROR(
      Exec(mode == IndexSync::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  recording_ = rec;
  Status s = Exec("BEGIN IMMEDIATE");
  if (s.ok()) {
    s = body();
    if (s.ok()) {
      s = Exec("COMMIT");
    }
    if (!s.ok() && !sqlite3_get_autocommit(db_)) {
      (void)Exec("ROLLBACK");
    }
  }
  recording_ = nullptr;
  if (s.ok()) {
    for (const auto& call : rec->syncs) {
      if (!call.ok)
        return Status::Io("index " + path_ + ": xSync(" + call.file + ") " + call.result, EIO);
    }
  }
  return s;
}

Status Index::Insert(const IndexRow& row, IndexSync mode, IndexCommit* commit,
                     std::string* replaced_location) {
  MutexLock lock(mu_);
  RowState state = row.state;
  return Transaction(mode, commit, [&]() REQUIRES(mu_) -> Status {
    {
      Stmt st(db_, "SELECT state, location, retention, digest FROM deliveries WHERE id = ?1");
      if (st.prepared() != SQLITE_OK) return Fail("select", st.prepared());
      st.Text(1, row.id);
      const int rc = sqlite3_step(st.get());
      if (rc == SQLITE_ROW) {
        if (st.Col(0) == "receipted") {
          auto held = writ::ParseRetention(st.Col(2));
          if (!row.supersedes_weaker || !held.ok() || *held >= row.retention ||
              st.Col(3) != writ::ToHex(row.digest)) {
            return Status::Refused("conflicting id: " + row.id + " is already retained");
          }
          state = RowState::kReceipted;
        }
        if (replaced_location) *replaced_location = st.Col(1);
      } else if (rc != SQLITE_DONE) {
        return Fail("select", rc);
      }
    }
    Stmt st(db_,
            "INSERT OR REPLACE INTO deliveries (id, bytes, chunk_size, rule, digest, retention, "
            "location, receipts, state, committed_at, sender, held_until_ms, regions)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    if (st.prepared() != SQLITE_OK) return Fail("insert", st.prepared());
    st.Text(1, row.id);
    st.Int(2, row.bytes);
    st.Int(3, row.chunk_size);
    st.Text(4, std::string(writ::RuleName(row.rule)));
    st.Text(5, writ::ToHex(row.digest));
    st.Text(6, std::string(writ::RetentionName(row.retention)));
    st.Text(7, row.location);
    st.Text(8, ReceiptsJson(row.receipts));
    st.Text(9, RowStateName(state));
    st.Text(10, row.committed_at);
    st.Text(11, row.sender);
    st.Int(12, row.held_until_ms);
    st.Text(13, EncodeRegionLengths(row.region_lengths));
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_DONE) return Fail("insert", rc);
    return Status::Ok();
  });
}

Status Index::AppendReceipt(const std::string& id, const std::string& receipt_json, IndexSync mode,
                            IndexCommit* commit) {
  MutexLock lock(mu_);
  return Transaction(mode, commit, [&]() REQUIRES(mu_) -> Status {
    std::vector<std::string> receipts;
    {
      Stmt st(db_, "SELECT receipts FROM deliveries WHERE id = ?1");
      if (st.prepared() != SQLITE_OK) return Fail("select", st.prepared());
      st.Text(1, id);
      const int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) return Status::NotFound("no delivery " + id + " in the index");
      if (rc != SQLITE_ROW) return Fail("select", rc);
      auto arr = nlohmann::json::parse(st.Col(0), nullptr, false);
      if (!arr.is_array()) return Status::Malformed("receipts of " + id + " are not a JSON array");
      for (const auto& r : arr) receipts.push_back(r.is_string() ? r.get<std::string>() : r.dump());
    }
    receipts.push_back(receipt_json);
    Stmt st(db_, "UPDATE deliveries SET receipts = ?2, state = 'receipted' WHERE id = ?1");
    if (st.prepared() != SQLITE_OK) return Fail("update", st.prepared());
    st.Text(1, id);
    st.Text(2, ReceiptsJson(receipts));
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_DONE) return Fail("update", rc);
    return Status::Ok();
  });
}

Result<std::vector<std::string>> Index::Expired(uint64_t now_ms) {
  MutexLock lock(mu_);
  std::vector<std::string> ids;
  if (!has_held_until_) return ids;  // an index from before time-to-lives promises none
  Stmt st(db_,
          "SELECT id FROM deliveries WHERE state = 'receipted' AND held_until_ms > 0 AND "
          "held_until_ms <= ?1 ORDER BY held_until_ms");
  if (st.prepared() != SQLITE_OK) return Fail("select", st.prepared());
  st.Int(1, now_ms);
  for (;;) {
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Fail("select", rc);
    ids.push_back(st.Col(0));
  }
  return ids;
}

Status Index::Delete(const std::vector<std::string>& ids, IndexSync mode, IndexCommit* commit) {
  if (ids.empty()) return Status::Ok();
  MutexLock lock(mu_);
  return Transaction(mode, commit, [&]() REQUIRES(mu_) -> Status {
    for (const auto& id : ids) {
      Stmt st(db_, "DELETE FROM deliveries WHERE id = ?1");
      if (st.prepared() != SQLITE_OK) return Fail("delete", st.prepared());
      st.Text(1, id);
      const int rc = sqlite3_step(st.get());
      if (rc != SQLITE_DONE) return Fail("delete", rc);
    }
    return Status::Ok();
  });
}

}  // namespace writ::store
