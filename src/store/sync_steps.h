// A durable commit as the sync sequence of docs/retention.md: each step's record says what
// it made durable and how (sync_description.h turns them into the receipt's words).
#pragma once

#include <cstdint>
#include <string>

#include "writ/types.h"

namespace writ::store {

enum class SyncMethod {
  kNone,          // nothing synced: the OS holds it (process-restart)
  kFdatasync,     // the payload file's data
  kFsync,         // a directory: the rename in it
  kSqliteFull,    // an index transaction with synchronous=FULL (the WAL synced)
  kSqliteNormal,  // an index transaction with synchronous=NORMAL (the WAL written, not synced)
};

// Step 1: the payload's bytes, written window by window under the temporary name.
struct PayloadWrites {
  std::string path;  // relative to the data directory: payloads/pN.tmp
  uint64_t calls = 0;
  uint64_t bytes = 0;
  uint64_t direct_calls = 0;  // of those, with O_DIRECT
  uint64_t direct_bytes = 0;
  std::string direct_refused;  // why O_DIRECT could not be used, when it could not
};

// Steps 2 and 4: a file's data or a directory made durable (or, method kNone, left to the OS).
struct SyncRecord {
  std::string path;  // relative to the data directory
  SyncMethod method = SyncMethod::kNone;
};

// Step 3: the payload closed and renamed into place.
struct RenameRecord {
  std::string from;
  std::string to;
};

// Step 5: the index row, committed.
struct IndexRecord {
  std::string file;  // index.db
  SyncMethod method = SyncMethod::kNone;
  std::string syncs;  // what SQLite's sync calls did (IndexCommit::Describe)
};

// What one commit did, step by step.
struct SyncSteps {
  RetentionClass retention = RetentionClass::kProcessRestart;
  PayloadWrites writes;
  SyncRecord payload_sync;
  RenameRecord rename;
  SyncRecord directory_sync;
  IndexRecord index;
};

}  // namespace writ::store
