// A retained delivery's lifecycle in-process: removal from each store (then unknown, its
// bytes gone, its capacity back), the crash-safe order of a durable removal under injected
// faults, time-to-lives (the promised time, the refusal before it, a forced removal, the
// expiry sweep at chosen clock values: no timing in these tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "store/expiry_sweeper.h"
#include "store/quarantine.h"
#include "store/routing_store.h"
#include "store/volatile_store.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::unique_ptr<DurableStore> OpenDurable(const std::string& dir, DurableOptions options = {}) {
  auto store = DurableStore::Open(dir, std::move(options));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::string PayloadOf(DurableStore& store, const std::string& id) {
  auto row = store.Find(id);
  EXPECT_TRUE(row.ok() && row->has_value());
  return row.ok() && row->has_value() ? store.dir() + "/" + (*row)->location : "";
}

TEST(Lifecycle, ARemovedDurableDeliveryIsUnknownItsPayloadGoneAndItStaysGone) {
  TempDir dir;
  const auto bytes = Bytes(1, 3 * 4096 + 5);
  {
    auto store = OpenDurable(dir.path());
    ASSERT_TRUE(store);
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("r", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
    const std::string payload = PayloadOf(*store, "r");
    ASSERT_TRUE(std::filesystem::exists(payload));

    auto removal = store->Remove("r", /*force=*/false, NowUnixMs());
    ASSERT_TRUE(removal.ok()) << removal.status().ToString();
    EXPECT_EQ(removal->id, "r");
    EXPECT_EQ(removal->retention, RetentionClass::kPowerLoss);
    EXPECT_EQ(removal->bytes, bytes.size());
    EXPECT_FALSE(removal->promise_broken) << "no time-to-live: no time was promised";
    EXPECT_TRUE(removal->note.empty()) << removal->note;

    auto looked = store->LookupVerified("r");
    ASSERT_TRUE(looked.ok());
    EXPECT_FALSE(looked->has_value()) << "a query says unknown";
    std::vector<uint8_t> out(bytes.size());
    EXPECT_EQ(store->Read("r", 0, out).code(), ErrorCode::kNotFound);
    EXPECT_FALSE(std::filesystem::exists(payload));

    auto again = store->Remove("r", false, NowUnixMs());
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.status().code(), ErrorCode::kNotFound);
    EXPECT_THAT(again.status().message(), HasSubstr("r"));
  }
  // A restart finds nothing of it: no row, nothing to quarantine.
  RecoveryReport report;
  auto reopened = DurableStore::Open(dir.path(), DurableOptions{}, &report);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(report.retained, 0u);
  EXPECT_TRUE(report.quarantined.empty());
  auto listed = (*reopened)->List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

TEST(Lifecycle, RemovalDropsTheRowDurablyBeforeItUnlinksThePayload) {
  TempDir dir;
  auto env = std::make_shared<RecordingEnv>();
  DurableOptions options;
  options.env = env;
  auto store = OpenDurable(dir.path(), options);
  ASSERT_TRUE(store);
  const auto bytes = Bytes(2, 5000);
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("o", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  env->Clear();
  ASSERT_TRUE(store->Remove("o", false, NowUnixMs()).ok());
  const auto calls = env->calls();
  auto at = [&](const std::string& prefix) {
    return std::find_if(calls.begin(), calls.end(),
                        [&](const std::string& c) { return c.rfind(prefix, 0) == 0; }) -
           calls.begin();
  };
  const auto index_sync = at("index-sync index.db-wal");
  const auto unlink = at("remove payloads/");
  const auto dir_sync = at("syncdir payloads");
  ASSERT_LT(static_cast<size_t>(dir_sync), calls.size()) << ::testing::PrintToString(calls);
  EXPECT_LT(index_sync, unlink) << "the row is gone (synced) before the payload is";
  EXPECT_LT(unlink, dir_sync) << "and the unlink is made durable by fsync(payloads/)";
}

TEST(Lifecycle, AFailedIndexSyncDuringRemovalLeavesTheDeliveryHeldAndReadable) {
  TempDir dir;
  const auto bytes = Bytes(3, 9000);
  auto faults = FaultInjectionEnv::Parse("index-sync@1=EIO", Env::Default());
  ASSERT_TRUE(faults.ok());
  FaultInjectionEnv* fe = faults->get();
  DurableOptions options;
  options.env = std::shared_ptr<Env>(std::move(faults).value());
  auto store = OpenDurable(dir.path(), options);
  ASSERT_TRUE(store);
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("h", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  const std::string payload = PayloadOf(*store, "h");
  fe->Arm();

  auto removal = store->Remove("h", false, NowUnixMs());
  ASSERT_FALSE(removal.ok());
  EXPECT_EQ(removal.status().code(), ErrorCode::kRetention)
      << "writ store rm: exit 6; " << removal.status().ToString();
  EXPECT_THAT(removal.status().message(), HasSubstr("it is still held"));
  EXPECT_EQ(fe->injected(), 1u);
  auto held = store->LookupVerified("h");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_TRUE(held->has_value()) << "the row was not dropped";
  EXPECT_EQ(ReadAll(*store, "h", bytes.size()), bytes);
  EXPECT_TRUE(std::filesystem::exists(payload));
  EXPECT_TRUE(store->sticky_failure()) << "a failed sync is sticky, as everywhere in the store";
}

TEST(Lifecycle, ACrashAfterTheRowWentLeavesAPayloadTheNextStartQuarantines) {
  TempDir dir;
  const auto bytes = Bytes(4, 7000);
  std::string payload;
  {
    auto faults = FaultInjectionEnv::Parse("remove@1=EIO", Env::Default());
    ASSERT_TRUE(faults.ok());
    FaultInjectionEnv* fe = faults->get();
    DurableOptions options;
    options.env = std::shared_ptr<Env>(std::move(faults).value());
    auto store = OpenDurable(dir.path(), options);
    ASSERT_TRUE(store);
    ASSERT_TRUE(
        StoreDelivery(*store, MetaFor("c", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
    payload = PayloadOf(*store, "c");
    fe->Arm();
    // The unlink fails as if the process died right after the row's commit.
    auto removal = store->Remove("c", false, NowUnixMs());
    ASSERT_TRUE(removal.ok()) << "the row is gone: it is removed";
    EXPECT_THAT(removal->note, HasSubstr("the next start quarantines it"));
    EXPECT_TRUE(std::filesystem::exists(payload));
    auto looked = store->LookupVerified("c");
    ASSERT_TRUE(looked.ok());
    EXPECT_FALSE(looked->has_value());
  }
  RecoveryReport report;
  auto reopened = DurableStore::Open(dir.path(), DurableOptions{}, &report);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(report.retained, 0u) << "never answered as held";
  ASSERT_EQ(report.quarantined.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(payload));
}

TEST(Lifecycle, ATimeToLiveIsPromisedRefusedBeforeItAndForcedWithTheBreakSaid) {
  TempDir dir;
  DurableOptions options;
  options.ttl = {{RetentionClass::kProcessRestart, 10min}};
  auto store = OpenDurable(dir.path(), options);
  ASSERT_TRUE(store);
  const auto bytes = Bytes(5, 4000);
  const uint64_t before = NowUnixMs();
  Stored stored =
      StoreDelivery(*store, MetaFor("t", bytes), bytes, RetentionClass::kProcessRestart);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  const uint64_t until = stored.evidence->held_until_ms;
  EXPECT_GE(until, before + 600000) << "at least the time-to-live after the commit";
  EXPECT_EQ(stored.evidence->ttl, 10min);
  auto row = store->Find("t");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->held_until_ms, until) << "the promised time is in the row: it outlives us";

  auto early = store->Remove("t", false, until - 1);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), ErrorCode::kRefused);
  EXPECT_THAT(early.status().message(), HasSubstr(UnixMsRfc3339(until)));
  ASSERT_TRUE(store->Lookup("t").ok() && store->Lookup("t")->has_value());

  auto forced = store->Remove("t", /*force=*/true, until - 1);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_TRUE(forced->promise_broken);
  EXPECT_THAT(RemovalLine(*forced, "removed by a test"),
              HasSubstr("t (process-restart, 4000 bytes): removed by a test; PROMISE BROKEN"));
}

TEST(Lifecycle, TheSweepRemovesOnlyWhatExpiredNeverEarlyNeverWithoutATimeToLive) {
  TempDir dir;
  VolatileStore::Options volatile_options;
  volatile_options.capacity = 1 << 20;
  volatile_options.ttl = 1min;
  auto volatile_store = VolatileStore::Open(volatile_options);
  ASSERT_TRUE(volatile_store.ok());
  DurableOptions options;
  options.ttl = {{RetentionClass::kPowerLoss, 2min}};  // process-restart: none
  auto durable = OpenDurable(dir.path(), options);
  ASSERT_TRUE(durable);
  RoutingStore store(std::move(volatile_store).value(), std::move(durable));
  const auto bytes = Bytes(6, 3000);
  const uint64_t start = NowUnixMs();
  for (auto [id, cls] :
       {std::pair{"v", RetentionClass::kVolatile}, std::pair{"p", RetentionClass::kPowerLoss},
        std::pair{"k", RetentionClass::kProcessRestart}}) {
    ASSERT_TRUE(StoreDelivery(store, MetaFor(id, bytes), bytes, cls).status.ok()) << id;
  }
  std::vector<std::string> log;
  const StoreLog tell = [&log](const std::string& line) { log.push_back(line); };
  EXPECT_EQ(SweepExpired(store, start, tell), 0u) << "nothing has expired yet";
  EXPECT_EQ(SweepExpired(store, start + 60000 + 10000, tell), 1u) << "the volatile one";
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("removed delivery v (volatile, 3000 bytes): its time-to-live"));
  EXPECT_EQ(SweepExpired(store, start + 120000 + 10000, tell), 1u) << "the power-loss one";
  EXPECT_THAT(log[1], HasSubstr("removed delivery p (power-loss, 3000 bytes)"));
  EXPECT_EQ(SweepExpired(store, UINT64_MAX / 2, tell), 0u) << "k has no time-to-live";
  EXPECT_TRUE(store.Lookup("k").ok() && store.Lookup("k")->has_value());
  EXPECT_FALSE(store.Lookup("v")->has_value());
  EXPECT_FALSE(store.Lookup("p")->has_value());
}

TEST(Lifecycle, AVolatileRemovalGivesItsCapacityBack) {
  auto opened = VolatileStore::Open("", 10000);
  ASSERT_TRUE(opened.ok());
  auto& store = **opened;
  const auto first = Bytes(7, 8000), second = Bytes(8, 8000);
  ASSERT_TRUE(
      StoreDelivery(store, MetaFor("a", first), first, RetentionClass::kVolatile).status.ok());
  Stored refused = StoreDelivery(store, MetaFor("b", second), second, RetentionClass::kVolatile);
  ASSERT_EQ(refused.status.code(), ErrorCode::kRefused) << "the capacity is enforced";
  EXPECT_THAT(refused.status.message(), HasSubstr("capacity of 10000 bytes"));

  auto removal = store.Remove("a", false, NowUnixMs());
  ASSERT_TRUE(removal.ok()) << removal.status().ToString();
  EXPECT_EQ(removal->bytes, first.size());
  std::vector<uint8_t> out(10);
  EXPECT_EQ(store.Read("a", 0, out).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store.Remove("a", false, NowUnixMs()).status().code(), ErrorCode::kNotFound);
  Stored fits = StoreDelivery(store, MetaFor("b", second), second, RetentionClass::kVolatile);
  EXPECT_TRUE(fits.status.ok()) << fits.status.ToString();
  EXPECT_EQ(ReadAll(store, "b", second.size()), second);
}

TEST(Lifecycle, TimeToLivesParseAndPrint) {
  auto parsed = ParseClassTtl("process-restart=7d");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->first, RetentionClass::kProcessRestart);
  EXPECT_EQ(parsed->second, std::chrono::hours(24 * 7));
  EXPECT_EQ(TtlText(parsed->second), "7d");
  EXPECT_EQ(TtlText(90s), "90s");
  EXPECT_EQ(TtlText(1500ms), "1500ms");
  EXPECT_FALSE(ParseClassTtl("volatile").ok());
  EXPECT_FALSE(ParseClassTtl("forever=1s").ok());
  EXPECT_FALSE(ParseClassTtl("volatile=0s").ok());
  EXPECT_FALSE(ParseClassTtl("volatile=10y").ok());
  EXPECT_EQ(UnixMsRfc3339(1700000000123), "2023-11-14T22:13:20.123Z");
}

}  // namespace
}  // namespace writ::store::testing
