// The durable store in-process: the sync sequence of each class, the
// evidence it returns, recovery, the sticky sync failure, dedupe, disk full.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "common/hex.h"
#include "store/routing_store.h"
#include "store_test_util.h"
#include "writ/vocabulary.h"

namespace writ::store::testing {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<DurableStore> OpenStore(const std::string& dir, std::shared_ptr<Env> env = nullptr,
                                        VerifyOnStart verify = VerifyOnStart::kUnsynced,
                                        RecoveryReport* report = nullptr) {
  DurableOptions options;
  options.env = std::move(env);
  options.verify = verify;
  auto store = DurableStore::Open(dir, options, report);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::string PayloadPathOf(DurableStore& store, const std::string& id) {
  auto row = store.Find(id);
  EXPECT_TRUE(row.ok() && row->has_value());
  return store.dir() + "/" + (*row)->location;
}

size_t IndexOf(const std::vector<std::string>& calls, const std::string& prefix, size_t from = 0) {
  for (size_t i = from; i < calls.size(); ++i) {
    if (calls[i].rfind(prefix, 0) == 0) return i;
  }
  return calls.size();
}

TEST(DurableStore, PowerLossRoundTripAndExactSyncSequence) {
  TempDir dir;
  auto env = std::make_shared<RecordingEnv>();
  auto store = OpenStore(dir.path() + "/data", env);
  ASSERT_TRUE(store);
  env->Clear();
  const auto bytes = Bytes(1, 3 * 4096 + 17);
  const auto meta = MetaFor("pl-1", bytes);
  Stored stored = StoreDelivery(*store, meta, bytes, RetentionClass::kPowerLoss);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();

  // open tmp, 4 writes, fdatasync tmp, close, rename tmp -> dat, fsync payloads/, then the index
  // commit (SQLite syncs its WAL), then the receipt's own commit (another WAL sync).
  const auto calls = env->calls();
  const size_t open = IndexOf(calls, "open payloads/");
  ASSERT_LT(open, calls.size());
  EXPECT_THAT(calls[open], HasSubstr(".tmp"));
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(),
                          [](const std::string& c) { return c.rfind("write payloads/", 0) == 0; }),
            4);
  const size_t sync = IndexOf(calls, "fdatasync payloads/", open);
  const size_t close = IndexOf(calls, "close payloads/", open);
  const size_t rename = IndexOf(calls, "rename payloads/", open);
  const size_t dirsync = IndexOf(calls, "syncdir payloads", open);
  const size_t index_sync = IndexOf(calls, "index-sync index.db-wal", dirsync);
  const size_t receipt_sync = IndexOf(calls, "index-sync index.db-wal", index_sync + 1);
  EXPECT_LT(sync, close);
  EXPECT_LT(close, rename);
  EXPECT_LT(rename, dirsync);
  EXPECT_LT(dirsync, index_sync);
  EXPECT_LT(index_sync, receipt_sync)
      << "the retained receipt is committed with synchronous=FULL too";
  EXPECT_LT(receipt_sync, calls.size());
  EXPECT_THAT(calls[rename], HasSubstr(".tmp payloads/"));
  EXPECT_THAT(calls[rename], HasSubstr(".dat"));

  ASSERT_TRUE(stored.evidence);
  const RetentionEvidence& ev = *stored.evidence;
  EXPECT_EQ(ev.retention, RetentionClass::kPowerLoss);
  EXPECT_THAT(ev.acknowledged_point, HasSubstr("fdatasync'd"));
  EXPECT_THAT(ev.acknowledged_point, HasSubstr("directory fsync'd"));
  EXPECT_THAT(ev.acknowledged_point, HasSubstr("synchronous=FULL"));
  EXPECT_THAT(ev.evidence, HasSubstr("fdatasync(payloads/"));
  EXPECT_THAT(ev.evidence, HasSubstr(") = 0"));
  EXPECT_THAT(ev.evidence, HasSubstr("fsync(directory payloads/) = 0"));
  EXPECT_THAT(ev.evidence, HasSubstr("xSync(index.db-wal) = ok"));
  EXPECT_THAT(ev.evidence, HasSubstr("filesystem of"));
  EXPECT_THAT(ev.promise_after_failure, HasSubstr("power loss"));
  EXPECT_THAT(ev.promise_after_failure, HasSubstr("writ query pl-1"));
  EXPECT_THAT(ev.promise_after_failure, HasSubstr("writ store cat pl-1"));
  EXPECT_THAT(ev.promise_after_failure, HasSubstr(writ::ToHex(meta.digest)));

  auto held = store->Lookup("pl-1");
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_EQ((*held)->retention, RetentionClass::kPowerLoss);
  EXPECT_EQ((*held)->meta.digest, meta.digest);
  EXPECT_EQ((*held)->receipts.size(), 3u) << "received, validated and the retained receipt";
  EXPECT_EQ(ReadAll(*store, "pl-1", bytes.size()), bytes);
}

// Aligned power-loss chunks go to the device with O_DIRECT (where the file system has it),
// an unaligned tail through the page cache; the bytes, the sync sequence and the evidence
// say exactly that. A read in between (a processing step) still works.
TEST(DurableStore, PowerLossWritesAlignedChunksDirectAndTheTailBuffered) {
  TempDir dir;
  auto env = std::make_shared<RecordingEnv>();
  auto store = OpenStore(dir.path() + "/data", env);
  ASSERT_TRUE(store);
  const auto bytes = Bytes(9, 3 * 4096 + 100);
  const auto meta = MetaFor("direct", bytes, 4096);
  std::unique_ptr<uint8_t, decltype(&std::free)> window(
      static_cast<uint8_t*>(std::aligned_alloc(4096, 4 * 4096)), &std::free);
  std::memcpy(window.get(), bytes.data(), bytes.size());
  auto writer = store->Begin(meta, RetentionClass::kPowerLoss);
  ASSERT_TRUE(writer.ok());
  for (uint64_t off = 0; off < bytes.size(); off += 4096) {
    const size_t n = std::min<size_t>(4096, bytes.size() - off);
    ASSERT_TRUE((*writer)->Write(off, std::span<const uint8_t>(window.get() + off, n)).ok());
    if (off == 4096) {  // a read while O_DIRECT may be on
      std::vector<uint8_t> back(4096);
      ASSERT_TRUE((*writer)->Read(0, back).ok());
      EXPECT_TRUE(std::equal(back.begin(), back.end(), bytes.begin()));
    }
  }
  auto ev = (*writer)->Commit({"{}"});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_TRUE(store->AppendReceipt("direct", "{}").ok());
  const bool direct = ev->evidence.find("with O_DIRECT") != std::string::npos;
  if (direct) {
    // Chunks 0 and 2 (chunk 1 follows the read, which turned O_DIRECT off) -- or all
    // three aligned ones; never the 100-byte tail.
    EXPECT_THAT(ev->evidence,
                ::testing::AnyOf(HasSubstr("2 of those pwrites (8192 bytes) with O_DIRECT"),
                                 HasSubstr("3 of those pwrites (12288 bytes) with O_DIRECT")));
  } else {
    EXPECT_THAT(ev->evidence, HasSubstr("O_DIRECT not available"));
    std::cout << "this file system has no O_DIRECT: " << ev->evidence << std::endl;
  }
  EXPECT_THAT(ev->evidence, HasSubstr("4 pwrite call(s), 12388 bytes"));
  EXPECT_THAT(ev->evidence, HasSubstr(") = 0; "));
  const auto calls = env->calls();
  EXPECT_LT(IndexOf(calls, "fdatasync payloads/"), IndexOf(calls, "rename payloads/"));
  EXPECT_EQ(ReadAll(*store, "direct", bytes.size()), bytes);
}

TEST(DurableStore, ProcessRestartMakesNoSyncCallsAndSaysSo) {
  TempDir dir;
  auto env = std::make_shared<RecordingEnv>();
  auto store = OpenStore(dir.path(), env);
  ASSERT_TRUE(store);
  env->Clear();
  const auto bytes = Bytes(2, 10000);
  Stored stored =
      StoreDelivery(*store, MetaFor("pr-1", bytes), bytes, RetentionClass::kProcessRestart);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  for (const auto& call : env->calls()) {
    EXPECT_EQ(call.rfind("fdatasync", 0), std::string::npos) << call;
    EXPECT_EQ(call.rfind("fsync", 0), std::string::npos) << call;
    EXPECT_EQ(call.rfind("syncdir", 0), std::string::npos) << call;
    EXPECT_EQ(call.rfind("index-sync", 0), std::string::npos)
        << call << " (synchronous=NORMAL commits do not sync)";
  }
  EXPECT_LT(IndexOf(env->calls(), "rename payloads/"), env->calls().size()) << "renamed into place";
  const RetentionEvidence& ev = *stored.evidence;
  EXPECT_EQ(ev.retention, RetentionClass::kProcessRestart);
  EXPECT_THAT(ev.acknowledged_point, HasSubstr("no fsync or fdatasync"));
  EXPECT_THAT(ev.acknowledged_point, HasSubstr("synchronous=NORMAL"));
  EXPECT_THAT(ev.evidence, HasSubstr("no fsync or fdatasync of the payload"));
  EXPECT_THAT(ev.promise_after_failure, HasSubstr("Not promised after a host power loss"));
  EXPECT_EQ(ReadAll(*store, "pr-1", bytes.size()), bytes);
}

TEST(DurableStore, SurvivesReopenAndServesTheSameBytes) {
  TempDir dir;
  const auto a = Bytes(3, 70000), b = Bytes(4, 1);
  {
    auto store = OpenStore(dir.path());
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("a", a, 8192), a, RetentionClass::kPowerLoss).status.ok());
    ASSERT_TRUE(StoreDelivery(*store, MetaFor("b", b, 8192, Rule::kSha256), b,
                              RetentionClass::kProcessRestart)
                    .status.ok());
  }
  RecoveryReport report;
  auto store = OpenStore(dir.path(), nullptr, VerifyOnStart::kAll, &report);
  EXPECT_EQ(report.retained, 2u);
  EXPECT_EQ(report.verified, 2u);
  EXPECT_TRUE(report.corrupt.empty());
  EXPECT_EQ(report.orphans_removed, 0u);
  EXPECT_EQ(ReadAll(*store, "a", a.size()), a);
  EXPECT_EQ(ReadAll(*store, "b", b.size()), b);
  auto list = store->List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
}

TEST(DurableStore, UncommittedWriterLeavesNothing) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  const auto bytes = Bytes(5, 5000);
  {
    auto writer = store->Begin(MetaFor("gone", bytes), RetentionClass::kPowerLoss);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write(0, bytes).ok());
  }
  auto held = store->Lookup("gone");
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());
  auto extra = store->UnreferencedFiles();
  ASSERT_TRUE(extra.ok());
  EXPECT_TRUE(extra->empty());
}

TEST(DurableStore, CommittedButNotReceiptedIsInvisibleAndDroppedAtRecovery) {
  TempDir dir;
  const auto bytes = Bytes(6, 3000);
  {
    auto store = OpenStore(dir.path());
    auto writer = store->Begin(MetaFor("half", bytes), RetentionClass::kPowerLoss);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write(0, bytes).ok());
    ASSERT_TRUE((*writer)->Commit({}).ok());
    // The receiver would now record the retained receipt; it "crashes" instead.
    auto held = store->Lookup("half");
    ASSERT_TRUE(held.ok());
    EXPECT_FALSE(held->has_value()) << "no retained receipt recorded: not retained";
  }
  RecoveryReport report;
  auto store = OpenStore(dir.path(), nullptr, VerifyOnStart::kUnsynced, &report);
  EXPECT_EQ(report.unreceipted, std::vector<std::string>{"half"});
  EXPECT_EQ(report.retained, 0u);
  auto extra = store->UnreferencedFiles();
  ASSERT_TRUE(extra.ok());
  EXPECT_TRUE(extra->empty()) << "its payload went with it";
  // The id is free again.
  EXPECT_TRUE(
      StoreDelivery(*store, MetaFor("half", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
}

TEST(DurableStore, RecoveryRemovesOrphansAndDropsCorruptDeliveries) {
  TempDir dir;
  const auto pr = Bytes(7, 20000), pl = Bytes(8, 20000), cut = Bytes(9, 20000),
             lost = Bytes(10, 100);
  std::string pr_path, pl_path, cut_path, lost_path;
  {
    auto store = OpenStore(dir.path());
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("pr", pr), pr, RetentionClass::kProcessRestart).status.ok());
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("pl", pl), pl, RetentionClass::kPowerLoss).status.ok());
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("cut", cut), cut, RetentionClass::kPowerLoss).status.ok());
    ASSERT_TRUE(StoreDelivery(*store, MetaFor("lost", lost), lost, RetentionClass::kProcessRestart)
                    .status.ok());
    pr_path = PayloadPathOf(*store, "pr");
    pl_path = PayloadPathOf(*store, "pl");
    cut_path = PayloadPathOf(*store, "cut");
    lost_path = PayloadPathOf(*store, "lost");
  }
  // A torn process-restart payload (same size, other bytes), a flipped power-loss payload, a
  // truncated one, a missing one, and two files no row names.
  auto flip = [](const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, 100), 1);
    b ^= 0x40;
    ASSERT_EQ(::pwrite(fd, &b, 1, 100), 1);
    ::close(fd);
  };
  flip(pr_path);
  flip(pl_path);
  ASSERT_EQ(::truncate(cut_path.c_str(), 5), 0);
  ASSERT_EQ(::unlink(lost_path.c_str()), 0);
  std::ofstream(dir.path() + "/payloads/pffffffffffffff00.tmp") << "half-written";
  std::ofstream(dir.path() + "/payloads/stray") << "x";

  RecoveryReport report;
  auto store = OpenStore(dir.path(), nullptr, VerifyOnStart::kUnsynced, &report);
  ASSERT_TRUE(store);
  EXPECT_EQ(report.orphans_removed, 1u) << "only the .tmp: never committed";
  // The corrupt payloads that are there, and the file no row names: moved, never deleted.
  EXPECT_EQ(report.quarantined.size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/quarantine/stray"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/quarantine/stray.why"));
  ASSERT_EQ(report.corrupt.size(), 3u);
  std::string all;
  for (const auto& c : report.corrupt) all += c + "\n";
  EXPECT_THAT(all, HasSubstr("pr (process-restart)"));
  EXPECT_THAT(all, HasSubstr("cut (power-loss)"));
  EXPECT_THAT(all, HasSubstr("lost (process-restart)"));
  EXPECT_THAT(all, HasSubstr("missing"));
  EXPECT_EQ(report.retained, 1u) << "pl: power-loss payloads get a size check under 'unsynced'";
  EXPECT_EQ(report.verified, 0u);
  for (const char* id : {"pr", "cut", "lost"}) {
    auto held = store->Lookup(id);
    ASSERT_TRUE(held.ok());
    EXPECT_FALSE(held->has_value()) << id << " must never be reported retained";
  }
  auto extra = store->UnreferencedFiles();
  ASSERT_TRUE(extra.ok());
  EXPECT_TRUE(extra->empty());
  const auto lines = report.Lines();
  ASSERT_GE(lines.size(), 4u);
  EXPECT_THAT(
      lines[0],
      HasSubstr("1 retained, 0 re-hashed, 3 corrupt dropped, 1 orphans removed, 0 unreceipted "
                "dropped, 3 payloads quarantined"));
  store.reset();

  // `all` re-hashes power-loss payloads too.
  RecoveryReport again;
  store = OpenStore(dir.path(), nullptr, VerifyOnStart::kAll, &again);
  ASSERT_EQ(again.corrupt.size(), 1u);
  EXPECT_THAT(again.corrupt[0], HasSubstr("pl (power-loss)"));
  EXPECT_EQ(again.retained, 0u);
}

TEST(DurableStore, VerifyNoneStillChecksPresenceAndSize) {
  TempDir dir;
  const auto bytes = Bytes(11, 9000);
  std::string path;
  {
    auto store = OpenStore(dir.path());
    ASSERT_TRUE(StoreDelivery(*store, MetaFor("x", bytes), bytes, RetentionClass::kProcessRestart)
                    .status.ok());
    path = PayloadPathOf(*store, "x");
  }
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  RecoveryReport report;
  auto store = OpenStore(dir.path(), nullptr, VerifyOnStart::kNone, &report);
  ASSERT_EQ(report.corrupt.size(), 1u);
  EXPECT_THAT(report.corrupt[0], HasSubstr("has 0 bytes, not 9000"));
}

TEST(DurableStore, SameIdIsAConflictOnceRetained) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  const auto a = Bytes(12, 100), b = Bytes(13, 100);
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("id", a), a, RetentionClass::kProcessRestart).status.ok());
  Stored again = StoreDelivery(*store, MetaFor("id", b), b, RetentionClass::kPowerLoss);
  EXPECT_EQ(again.status.code(), ErrorCode::kRefused) << again.status.ToString();
  EXPECT_THAT(again.status.message(), HasSubstr("conflicting id"));
  EXPECT_EQ(ReadAll(*store, "id", a.size()), a) << "the first delivery is untouched";
  auto extra = store->UnreferencedFiles();
  ASSERT_TRUE(extra.ok());
  EXPECT_TRUE(extra->empty()) << "the refused attempt's payload was removed";
}

TEST(DurableStore, ASupersedingCopyReplacesAWeakerOneOfTheSameBytesOnly) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  const auto a = Bytes(14, 100), b = Bytes(15, 100);
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("id", a), a, RetentionClass::kProcessRestart).status.ok());
  auto before = store->Find("id");
  ASSERT_TRUE(before.ok() && before->has_value());
  // Other bytes are a conflict even when superseding.
  DeliveryMeta other = MetaFor("id", b);
  other.supersedes_weaker = true;
  EXPECT_EQ(StoreDelivery(*store, other, b, RetentionClass::kPowerLoss).status.code(),
            ErrorCode::kRefused);
  // The same bytes in a stronger class take the old row's place; its payload goes.
  DeliveryMeta same = MetaFor("id", a);
  same.supersedes_weaker = true;
  Stored upgraded = StoreDelivery(*store, same, a, RetentionClass::kPowerLoss);
  ASSERT_TRUE(upgraded.status.ok()) << upgraded.status.ToString();
  auto after = store->Find("id");
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->retention, RetentionClass::kPowerLoss);
  EXPECT_NE((*after)->location, (*before)->location);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + (*before)->location));
  EXPECT_EQ(ReadAll(*store, "id", a.size()), a);
  // Not weaker any more: a second upgrade to the same class is a conflict.
  EXPECT_EQ(StoreDelivery(*store, same, a, RetentionClass::kPowerLoss).status.code(),
            ErrorCode::kRefused);
}

// statfs reports the free space a test chooses.
class SmallDiskEnv : public EnvWrapper {
 public:
  explicit SmallDiskEnv(uint64_t free) : EnvWrapper(Env::Default()), free_(free) {}
  Result<FsInfo> StatFs(const std::string& path) override {
    auto info = EnvWrapper::StatFs(path);
    if (info.ok()) info->free_bytes = free_;
    return info;
  }

 private:
  uint64_t free_;
};

TEST(DurableStore, DiskFullIsARetentionFailureBeforeAnyByteMoves) {
  TempDir dir;
  auto store = OpenStore(dir.path(), std::make_shared<SmallDiskEnv>(3 << 20));
  const auto small = Bytes(14, 1 << 20), big = Bytes(15, 3 << 20);
  ASSERT_TRUE(StoreDelivery(*store, MetaFor("small", small), small, RetentionClass::kPowerLoss)
                  .status.ok());
  auto writer = store->Begin(MetaFor("big", big), RetentionClass::kPowerLoss);
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), ErrorCode::kRetention);
  EXPECT_THAT(writer.status().message(), HasSubstr("disk full"));
  // Space is promised as windows are granted (Placement), not at the announce: two
  // deliveries may begin, but they cannot both be promised the same free space.
  auto first = store->Begin(MetaFor("one", small), RetentionClass::kProcessRestart);
  ASSERT_TRUE(first.ok());
  const auto two = Bytes(16, 1536 << 10);
  auto second = store->Begin(MetaFor("two", two), RetentionClass::kProcessRestart);
  ASSERT_TRUE(second.ok()) << "an announce alone promises no space";
  ASSERT_TRUE((*first)->Placement(0, small.size()).ok());
  auto window = (*second)->Placement(0, two.size());
  ASSERT_FALSE(window.ok());
  EXPECT_THAT(window.status().message(), HasSubstr("disk full"));
  first->reset();
  EXPECT_TRUE((*second)->Placement(0, two.size()).ok()) << "the first one's promise was released";
  second->reset();
  EXPECT_EQ(ReadAll(*store, "small", small.size()), small);
}

TEST(DurableStore, FailedSyncIsStickyForPowerLossUntilRestartAndRecheck) {
  TempDir dir;
  const auto before = Bytes(17, 5000), bytes = Bytes(18, 5000);
  {
    auto store = OpenStore(dir.path());
    ASSERT_TRUE(StoreDelivery(*store, MetaFor("before", before), before, RetentionClass::kPowerLoss)
                    .status.ok());
  }
  std::vector<std::string> log;
  auto faults = FaultInjectionEnv::Parse("fdatasync@1=EIO", Env::Default());
  ASSERT_TRUE(faults.ok());
  FaultInjectionEnv* fe = faults->get();
  DurableOptions options;
  options.env = std::shared_ptr<Env>(std::move(faults).value());
  options.log = [&log](const std::string& line) { log.push_back(line); };
  auto opened = DurableStore::Open(dir.path(), options);
  ASSERT_TRUE(opened.ok());
  auto store = std::move(opened).value();
  fe->Arm();

  Stored failed = StoreDelivery(*store, MetaFor("x", bytes), bytes, RetentionClass::kPowerLoss);
  EXPECT_EQ(failed.status.code(), ErrorCode::kRetention) << failed.status.ToString();
  EXPECT_THAT(failed.status.message(), HasSubstr("fdatasync"));
  ASSERT_TRUE(store->sticky_failure());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("refused from now on"));

  // The next fdatasync would succeed: the refusal is sticky anyway.
  auto refused = store->Begin(MetaFor("y", bytes), RetentionClass::kPowerLoss);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kRetention);
  EXPECT_THAT(refused.status().message(), HasSubstr("restart the receiver"));
  EXPECT_TRUE(StoreDelivery(*store, MetaFor("z", bytes), bytes, RetentionClass::kProcessRestart)
                  .status.ok())
      << "process-restart retention needs no sync";
  auto x = store->Lookup("x");
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE(x->has_value());
  store.reset();

  // Restart: the marker makes recovery re-hash everything, then power-loss works again.
  RecoveryReport report;
  auto restarted = OpenStore(dir.path(), nullptr, VerifyOnStart::kNone, &report);
  EXPECT_TRUE(report.previous_sync_failure);
  EXPECT_EQ(report.verified, 2u) << "before and z, re-hashed although verify-on-start is none";
  EXPECT_TRUE(report.corrupt.empty());
  EXPECT_FALSE(restarted->sticky_failure());
  EXPECT_TRUE(StoreDelivery(*restarted, MetaFor("y", bytes), bytes, RetentionClass::kPowerLoss)
                  .status.ok());
  restarted.reset();
  RecoveryReport third;
  OpenStore(dir.path(), nullptr, VerifyOnStart::kNone, &third);
  EXPECT_FALSE(third.previous_sync_failure) << "the marker is removed once re-checked";
}

// Every step of retention, failed with each errno: the delivery is refused with a retention
// error, a failed sync makes power-loss sticky, and a restart finds nothing corrupt and every
// earlier delivery intact.
struct FaultCase {
  std::string op;
  int err;
  RetentionClass retention;
};

TEST(DurableStore, FaultAtEveryStepOfRetention) {
  const std::vector<std::string> ops = {"open",    "write",       "fdatasync",      "rename",
                                        "syncdir", "index-write", "index-truncate", "index-sync"};
  int cases = 0;
  for (const RetentionClass retention :
       {RetentionClass::kPowerLoss, RetentionClass::kProcessRestart}) {
    for (const std::string& op : ops) {
      for (const char* err : {"EIO", "ENOSPC"}) {
        for (int nth = 1;; ++nth) {
          SCOPED_TRACE(std::string(writ::RetentionName(retention)) + " " + op + "@" +
                       std::to_string(nth) + "=" + err);
          TempDir dir;
          const auto earlier = Bytes(20, 12345), bytes = Bytes(21 + nth, 3 * 4096 + 5);
          {
            auto store = OpenStore(dir.path());
            ASSERT_TRUE(
                StoreDelivery(*store, MetaFor("earlier", earlier), earlier, retention).status.ok());
          }
          auto faults =
              FaultInjectionEnv::Parse(op + "@" + std::to_string(nth) + "=" + err, Env::Default());
          ASSERT_TRUE(faults.ok());
          FaultInjectionEnv* fe = faults->get();
          DurableOptions options;
          options.env = std::shared_ptr<Env>(std::move(faults).value());
          auto opened = DurableStore::Open(dir.path(), options);
          ASSERT_TRUE(opened.ok()) << opened.status().ToString();
          auto store = std::move(opened).value();
          fe->Arm();
          Stored stored = StoreDelivery(*store, MetaFor("d", bytes), bytes, retention);
          if (fe->injected() == 0) {
            EXPECT_TRUE(stored.status.ok()) << stored.status.ToString();
            break;  // no step left to fail
          }
          ++cases;
          EXPECT_FALSE(stored.status.ok());
          EXPECT_TRUE(stored.status.code() == ErrorCode::kRetention ||
                      stored.status.code() == ErrorCode::kIo)
              << "maps to refusal 'retention' and exit 6: " << stored.status.ToString();
          const bool sync_op = op == "fdatasync" || op == "syncdir" || op == "index-sync";
          EXPECT_EQ(store->sticky_failure().has_value(), sync_op) << stored.status.ToString();
          auto held = store->Lookup("d");
          ASSERT_TRUE(held.ok());
          EXPECT_FALSE(held->has_value()) << "a failed delivery is not retained";
          if (sync_op) {
            auto refused = store->Begin(MetaFor("next", bytes), RetentionClass::kPowerLoss);
            EXPECT_FALSE(refused.ok());
          }
          EXPECT_EQ(ReadAll(*store, "earlier", earlier.size()), earlier);
          store.reset();

          RecoveryReport report;
          auto restarted = OpenStore(dir.path(), nullptr, VerifyOnStart::kAll, &report);
          ASSERT_TRUE(restarted);
          EXPECT_TRUE(report.corrupt.empty()) << report.Lines()[0];
          EXPECT_EQ(ReadAll(*restarted, "earlier", earlier.size()), earlier);
          auto d = restarted->Lookup("d");
          ASSERT_TRUE(d.ok());
          if (d->has_value()) {
            EXPECT_EQ(ReadAll(*restarted, "d", bytes.size()), bytes) << "retained means intact";
          }
          auto extra = restarted->UnreferencedFiles();
          ASSERT_TRUE(extra.ok());
          EXPECT_TRUE(extra->empty());
          ASSERT_LT(nth, 50) << "runaway";
        }
      }
    }
  }
  std::cout << cases << " injected faults, each refused cleanly" << std::endl;
  EXPECT_GT(cases, 20);
}

TEST(DurableStore, ReadOnlyOpenReadsWithoutRecoveringOrWriting) {
  TempDir dir;
  const auto bytes = Bytes(30, 4000);
  {
    auto store = OpenStore(dir.path());
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("r", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  }
  std::ofstream(dir.path() + "/payloads/orphan.tmp") << "x";
  DurableOptions options;
  options.read_only = true;
  auto store = DurableStore::Open(dir.path(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto row = (*store)->Find("r");
  ASSERT_TRUE(row.ok() && row->has_value());
  std::vector<uint8_t> streamed;
  ASSERT_TRUE((*store)
                  ->Stream(**row,
                           [&](std::span<const uint8_t> b) {
                             streamed.insert(streamed.end(), b.begin(), b.end());
                             return Status::Ok();
                           })
                  .ok());
  EXPECT_EQ(streamed, bytes);
  EXPECT_TRUE((*store)->Verify(**row).ok());
  auto extra = (*store)->UnreferencedFiles();
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(*extra, std::vector<std::string>{"payloads/orphan.tmp"}) << "reported, not removed";
  EXPECT_FALSE((*store)->Begin(MetaFor("w", bytes), RetentionClass::kPowerLoss).ok());

  DurableOptions ro;
  ro.read_only = true;
  auto missing = DurableStore::Open(dir.path() + "/nope", ro);
  EXPECT_FALSE(missing.ok());
}

TEST(DurableStore, RoutingStoreKeepsVolatileDeliveriesOutOfTheDataDirectory) {
  TempDir scratch, data;
  RecordingEnv vol_env;  // the volatile store's file calls go through the Env too
  auto vol = VolatileStore::Open(scratch.path(), 1 << 30, &vol_env);
  ASSERT_TRUE(vol.ok());
  RoutingStore store(std::move(vol).value(), OpenStore(data.path()));
  EXPECT_TRUE(store.Offers(RetentionClass::kVolatile));
  EXPECT_TRUE(store.Offers(RetentionClass::kProcessRestart));
  EXPECT_TRUE(store.Offers(RetentionClass::kPowerLoss));
  const auto v = Bytes(40, 1000), p = Bytes(41, 1000);
  ASSERT_TRUE(StoreDelivery(store, MetaFor("v", v), v, RetentionClass::kVolatile).status.ok());
  ASSERT_TRUE(StoreDelivery(store, MetaFor("p", p), p, RetentionClass::kPowerLoss).status.ok());
  auto hv = store.Lookup("v");
  auto hp = store.Lookup("p");
  ASSERT_TRUE(hv.ok() && hv->has_value() && hp.ok() && hp->has_value());
  EXPECT_EQ((*hv)->retention, RetentionClass::kVolatile);
  EXPECT_EQ((*hv)->receipts.size(), 3u);
  EXPECT_EQ((*hp)->retention, RetentionClass::kPowerLoss);
  EXPECT_EQ(ReadAll(store, "v", v.size()), v);
  const auto vol_calls = vol_env.calls();
  // One write of the bytes, one of the receipts given at commit, one of the retained one
  // appended after it (the texts live in the same unlinked file).
  EXPECT_EQ(std::count(vol_calls.begin(), vol_calls.end(), "write fd"), 3);
  EXPECT_EQ(ReadAll(store, "p", p.size()), p);
  DurableOptions ro;
  ro.read_only = true;
  auto offline = DurableStore::Open(data.path(), ro);
  ASSERT_TRUE(offline.ok());
  auto rows = (*offline)->List();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].id, "p");
}

// The receipts signed with `retained` are recorded together, in order, with the delivery
// whichever store holds it.
TEST(DurableStore, RoutingStoreAppendsSeveralReceiptsInOrderWhereTheDeliveryIs) {
  TempDir scratch, data;
  auto vol = VolatileStore::Open(scratch.path(), 1 << 30);
  ASSERT_TRUE(vol.ok());
  RoutingStore store(std::move(vol).value(), OpenStore(data.path()));
  const auto v = Bytes(42, 1000), p = Bytes(43, 1000);
  for (const auto& [id, bytes, retention] :
       {std::tuple{"v2", v, RetentionClass::kVolatile},
        std::tuple{"p2", p, RetentionClass::kProcessRestart}}) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(StoreDelivery(store, MetaFor(id, bytes), bytes, retention).status.ok());
    const std::vector<std::string> two = {"{\"n\":1}", "{\"n\":2}"};
    ASSERT_TRUE(store.AppendReceipts(id, two).ok());
    auto held = store.Lookup(id);
    ASSERT_TRUE(held.ok() && held->has_value());
    const auto& receipts = (*held)->receipts;
    ASSERT_GE(receipts.size(), 2u);
    EXPECT_EQ(receipts[receipts.size() - 2], "{\"n\":1}");
    EXPECT_EQ(receipts.back(), "{\"n\":2}");
  }
  const std::vector<std::string> one = {"{}"};
  EXPECT_EQ(store.AppendReceipts("none", one).code(), ErrorCode::kNotFound);
}

TEST(FaultInjectionEnv, ParsesSpecsAndFailsTheNthCall) {
  EXPECT_FALSE(FaultInjectionEnv::Parse("", Env::Default()).ok());
  EXPECT_FALSE(FaultInjectionEnv::Parse("fsync", Env::Default()).ok());
  EXPECT_FALSE(FaultInjectionEnv::Parse("teleport@1=EIO", Env::Default()).ok());
  EXPECT_FALSE(FaultInjectionEnv::Parse("write@0=EIO", Env::Default()).ok());
  EXPECT_FALSE(FaultInjectionEnv::Parse("write@1=EWHAT", Env::Default()).ok());
  auto env = FaultInjectionEnv::Parse("remove@2=ENOSPC,rename@1+=EIO", Env::Default());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  TempDir dir;
  const std::string a = dir.path() + "/a", b = dir.path() + "/b";
  std::ofstream(a) << "1";
  EXPECT_TRUE((*env)->Rename(a, b).ok()) << "not armed: passes through";
  (*env)->Arm();
  EXPECT_EQ((*env)->Rename(b, a).sys_errno(), EIO);
  EXPECT_EQ((*env)->Rename(b, a).sys_errno(), EIO) << "+: every call from the Nth on";
  EXPECT_TRUE((*env)->Remove(dir.path() + "/nonexistent").sys_errno() == ENOENT);
  EXPECT_EQ((*env)->Remove(b).sys_errno(), ENOSPC);
  EXPECT_EQ((*env)->injected(), 3u);
  EXPECT_EQ((*env)->calls("rename"), 2u);
}

TEST(VerifyOnStart, Names) {
  for (auto mode : {VerifyOnStart::kAll, VerifyOnStart::kUnsynced, VerifyOnStart::kNone}) {
    auto parsed = ParseVerifyOnStart(VerifyOnStartName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_FALSE(ParseVerifyOnStart("some").ok());
}

}  // namespace
}  // namespace writ::store::testing
