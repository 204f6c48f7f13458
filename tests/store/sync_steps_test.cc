// A durable commit's sync sequence as records (store/sync_steps.h), and the receipt's words
// rendered from them (store/sync_description.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/sync_description.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::optional<SyncSteps> CommitSteps(const std::string& dir, RetentionClass retention) {
  auto store = DurableStore::Open(dir, DurableOptions{});
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return std::nullopt;
  const auto bytes = Bytes(7, 3 * 4096 + 17);
  Stored stored = StoreDelivery(**store, MetaFor("s-1", bytes), bytes, retention);
  EXPECT_TRUE(stored.status.ok()) << stored.status.ToString();
  return stored.evidence ? stored.evidence->steps : std::nullopt;
}

TEST(SyncSteps, PowerLossRecordsEachStepAndHowItWasSynced) {
  TempDir dir;
  auto steps = CommitSteps(dir.path() + "/data", RetentionClass::kPowerLoss);
  ASSERT_TRUE(steps);
  EXPECT_EQ(steps->retention, RetentionClass::kPowerLoss);
  EXPECT_THAT(steps->writes.path, StartsWith("payloads/p"));
  EXPECT_THAT(steps->writes.path, EndsWith(".tmp"));
  EXPECT_EQ(steps->writes.calls, 4u);
  EXPECT_EQ(steps->writes.bytes, 3u * 4096 + 17);
  EXPECT_EQ(steps->payload_sync.method, SyncMethod::kFdatasync);
  EXPECT_EQ(steps->payload_sync.path, steps->writes.path);
  EXPECT_EQ(steps->rename.from, steps->writes.path);
  EXPECT_THAT(steps->rename.to, EndsWith(".dat"));
  EXPECT_EQ(steps->directory_sync.method, SyncMethod::kFsync);
  EXPECT_EQ(steps->directory_sync.path, "payloads");
  EXPECT_EQ(steps->index.file, "index.db");
  EXPECT_EQ(steps->index.method, SyncMethod::kSqliteFull);
  EXPECT_THAT(steps->index.syncs, HasSubstr("xSync(index.db-wal) = ok"));
}

TEST(SyncSteps, ProcessRestartRecordsThatNothingWasSynced) {
  TempDir dir;
  auto steps = CommitSteps(dir.path() + "/data", RetentionClass::kProcessRestart);
  ASSERT_TRUE(steps);
  EXPECT_EQ(steps->payload_sync.method, SyncMethod::kNone);
  EXPECT_THAT(steps->rename.to, EndsWith(".dat"));
  EXPECT_EQ(steps->directory_sync.method, SyncMethod::kNone);
  EXPECT_EQ(steps->index.method, SyncMethod::kSqliteNormal);
}

SyncSteps PowerLossSteps() {
  SyncSteps s;
  s.retention = RetentionClass::kPowerLoss;
  s.writes = PayloadWrites{"payloads/p01.tmp", 3, 12305, 2, 8192, ""};
  s.payload_sync = SyncRecord{"payloads/p01.tmp", SyncMethod::kFdatasync};
  s.rename = RenameRecord{"payloads/p01.tmp", "payloads/p01.dat"};
  s.directory_sync = SyncRecord{"payloads", SyncMethod::kFsync};
  s.index = IndexRecord{"index.db", SyncMethod::kSqliteFull, "SQLITE-SYNCS"};
  return s;
}

const DeliveryMeta kMeta{"d-1", 12305, 4096, Rule::kCrc32c, {0xab, 0xcd, 0xef, 0x01},
                         "",    false, {}};
const StorePlace kPlace{"/srv/writ", "ext4 (statfs f_type 0xef53)"};

TEST(SyncSteps, PowerLossEvidenceTellsEveryStepInOrder) {
  const RetentionEvidence ev = DescribeCommit(PowerLossSteps(), kMeta, kPlace);
  EXPECT_EQ(ev.retention, RetentionClass::kPowerLoss);
  EXPECT_EQ(ev.evidence,
            "payload payloads/p01.tmp: 3 pwrite call(s), 12305 bytes, each returned success; "
            "2 of those pwrites (8192 bytes) with O_DIRECT, from the receiver's window to the "
            "device; fdatasync(payloads/p01.tmp) = 0; "
            "rename(payloads/p01.tmp, payloads/p01.dat) = 0; fsync(directory payloads/) = 0; "
            "index row committed in index.db: SQLITE-SYNCS; this receipt is sent only after it "
            "is itself added to that row by a synchronous=FULL commit; filesystem of "
            "/srv/writ: ext4 (statfs f_type 0xef53); whether the device honors flushes is not "
            "known to writ");
  EXPECT_EQ(ev.acknowledged_point,
            "payload fdatasync'd under a temporary name, renamed into place and its directory "
            "fsync'd; index row committed with SQLite synchronous=FULL (WAL synced); this "
            "receipt added to the row by another synchronous=FULL commit before it was sent");
  EXPECT_EQ(
      ev.promise_after_failure,
      "after a power loss of the receiving host (on storage that honors flushes) or a "
      "crash of the receiver process, and a restart of the receiver on /srv/writ: "
      "`writ query d-1 --to HOST:PORT` returns d-1 (12305 bytes, crc32c abcdef01) as retained and "
      "`writ store cat d-1 --data /srv/writ` yields 12305 bytes with this digest");
  ASSERT_TRUE(ev.steps);
  EXPECT_EQ(ev.steps->rename.to, "payloads/p01.dat") << "the records travel with their words";
}

TEST(SyncSteps, ProcessRestartEvidenceSaysWhatWasNotSynced) {
  SyncSteps s = PowerLossSteps();
  s.retention = RetentionClass::kProcessRestart;
  s.writes.direct_calls = 0;
  s.writes.direct_refused = "EINVAL";
  s.payload_sync.method = SyncMethod::kNone;
  s.directory_sync.method = SyncMethod::kNone;
  s.index.method = SyncMethod::kSqliteNormal;
  const RetentionEvidence ev = DescribeCommit(s, kMeta, kPlace);
  EXPECT_EQ(ev.evidence,
            "payload payloads/p01.tmp: 3 pwrite call(s), 12305 bytes, each returned success; "
            "O_DIRECT not available (EINVAL): written through the page cache; no fsync or "
            "fdatasync of the payload; rename(payloads/p01.tmp, payloads/p01.dat) = 0; "
            "index row committed in index.db: SQLITE-SYNCS; this receipt is sent only after it "
            "is itself added to that row by a synchronous=NORMAL commit; filesystem of "
            "/srv/writ: ext4 (statfs f_type 0xef53)");
  EXPECT_EQ(ev.acknowledged_point,
            "payload written to the OS (page cache; no fsync or fdatasync) under a temporary "
            "name and renamed into place; index row committed with SQLite synchronous=NORMAL "
            "(WAL written to the OS, not synced); this receipt added to the row the same way "
            "before it was sent");
  EXPECT_THAT(ev.promise_after_failure,
              HasSubstr("Not promised after a host power loss or kernel crash"));
}

TEST(SyncSteps, ProcessRestartWithODirectSaysSoInItsAcknowledgedPoint) {
  SyncSteps s = PowerLossSteps();
  s.retention = RetentionClass::kProcessRestart;
  const RetentionEvidence ev = DescribeCommit(s, kMeta, kPlace);
  EXPECT_THAT(ev.acknowledged_point,
              StartsWith("payload written to the OS (with O_DIRECT to the device, an unaligned "
                         "tail to the page cache; no fsync or fdatasync) under a temporary name"));
}

}  // namespace
}  // namespace writ::store::testing
