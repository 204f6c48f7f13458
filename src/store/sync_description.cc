#include "store/sync_description.h"

#include "common/hex.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::store {
namespace {

const char* SqliteMode(SyncMethod method) {
  return method == SyncMethod::kSqliteFull ? "synchronous=FULL" : "synchronous=NORMAL";
}

void DescribeWrites(const PayloadWrites& w, std::string& ev) {
  ev += "payload " + w.path + ": " + std::to_string(w.calls) + " pwrite call(s), " +
        std::to_string(w.bytes) + " bytes, each returned success";
  if (w.direct_calls > 0) {
    ev += "; " + std::to_string(w.direct_calls) + " of those pwrites (" +
          std::to_string(w.direct_bytes) +
          " bytes) with O_DIRECT, from the receiver's window to the device";
  } else if (!w.direct_refused.empty()) {
    ev += "; O_DIRECT not available (" + w.direct_refused + "): written through the page cache";
  }
}

// The evidence: one clause per step, in the order they ran.
std::string Evidence(const SyncSteps& s, const StorePlace& place) {
  std::string ev;
  DescribeWrites(s.writes, ev);
  ev += s.payload_sync.method == SyncMethod::kFdatasync
            ? "; fdatasync(" + s.payload_sync.path + ") = 0"
            : "; no fsync or fdatasync of the payload";
  ev += "; rename(" + s.rename.from + ", " + s.rename.to + ") = 0";
  if (s.directory_sync.method == SyncMethod::kFsync) {
    ev += "; fsync(directory " + s.directory_sync.path + "/) = 0";
  }
  ev += "; index row committed in " + s.index.file + ": " + s.index.syncs;
  ev += std::string("; this receipt is sent only after it is itself added to that row by a ") +
        SqliteMode(s.index.method) + " commit";
  ev += "; filesystem of " + place.dir + ": " + place.filesystem;
  if (s.retention == RetentionClass::kPowerLoss) {
    ev += "; whether the device honors flushes is not known to writ";
  }
  return ev;
}

void DescribePowerLoss(const std::string& result, const StorePlace& place, RetentionEvidence& out) {
  out.acknowledged_point =
      "payload fdatasync'd under a temporary name, renamed into place and its directory "
      "fsync'd; index row committed with SQLite synchronous=FULL (WAL synced); this receipt "
      "added to the row by another synchronous=FULL commit before it was sent";
  out.promise_after_failure =
      "after a power loss of the receiving host (on storage that honors flushes) or a crash of "
      "the receiver process, and a restart of the receiver on " +
      place.dir + ": " + result;
}

void DescribeProcessRestart(const SyncSteps& s, const std::string& result, const StorePlace& place,
                            RetentionEvidence& out) {
  out.acknowledged_point =
      std::string(s.writes.direct_calls > 0
                      ? "payload written to the OS (with O_DIRECT to the device, an unaligned "
                        "tail to the page cache; no fsync or fdatasync)"
                      : "payload written to the OS (page cache; no fsync or fdatasync)") +
      " under a temporary name and renamed into place; index row committed with SQLite "
      "synchronous=NORMAL (WAL written to the OS, not synced); this receipt added to the row "
      "the same way before it was sent";
  out.promise_after_failure =
      "after the receiver process crashes or is killed and restarts on " + place.dir +
      " while the host keeps running: " + result +
      ". Not promised after a host power loss or kernel crash: then the delivery may be gone, "
      "and is never reported retained unless its bytes match its digest";
}

}  // namespace

RetentionEvidence DescribeCommit(const SyncSteps& steps, const DeliveryMeta& meta,
                                 const StorePlace& place) {
  const std::string object = meta.id + " (" + std::to_string(meta.bytes) + " bytes, " +
                             std::string(writ::RuleName(meta.rule)) + " " +
                             writ::ToHex(meta.digest) + ")";
  // The command as it runs: `query` needs the receiver's address (HOST:PORT, the serve's
  // --listen), which the store does not know.
  const std::string result = "`writ query " + meta.id + " --to HOST:PORT` returns " + object +
                             " as retained and `writ store cat " + meta.id + " --data " +
                             place.dir + "` yields " + std::to_string(meta.bytes) +
                             " bytes with this digest";
  RetentionEvidence out;
  out.retention = steps.retention;
  out.evidence = Evidence(steps, place);
  if (steps.retention == RetentionClass::kPowerLoss) {
    DescribePowerLoss(result, place, out);
  } else {
    DescribeProcessRestart(steps, result, place, out);
  }
  out.steps = steps;
  return out;
}

}  // namespace writ::store
