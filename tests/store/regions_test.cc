// A scatter-gather delivery's region table in the store: its text form in the index, where
// region k lies, and that both stores keep it with the delivery (the durable one across a
// reopen, and an index from before the column reads as plain).
#include "store/regions.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store/volatile_store.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

TEST(RegionTable, TextRoundTripAndMalformedText) {
  const std::vector<uint64_t> lengths = {4096, 0, 18446744073709551615ull, 7};
  EXPECT_EQ(EncodeRegionLengths(lengths), "4096,0,18446744073709551615,7");
  auto back = DecodeRegionLengths(EncodeRegionLengths(lengths));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, lengths);
  EXPECT_EQ(EncodeRegionLengths({}), "");
  ASSERT_TRUE(DecodeRegionLengths("").ok());
  EXPECT_TRUE(DecodeRegionLengths("")->empty());
  for (const char* bad : {"4096,", ",1", "1,,2", "x", "1;2", "-1", "18446744073709551616"}) {
    EXPECT_EQ(DecodeRegionLengths(bad).status().code(), ErrorCode::kMalformed) << bad;
  }
}

TEST(RegionTable, WhereRegionKLies) {
  const std::vector<uint64_t> lengths = {10, 0, 5};
  auto r2 = RegionRange(lengths, 15, 2);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->offset, 10u);
  EXPECT_EQ(r2->length, 5u);
  auto r1 = RegionRange(lengths, 15, 1);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->offset, 10u);
  EXPECT_EQ(r1->length, 0u);
  EXPECT_EQ(RegionRange(lengths, 15, 3).status().code(), ErrorCode::kNotFound);
  // A plain delivery is one region, 0.
  auto whole = RegionRange({}, 99, 0);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->length, 99u);
  EXPECT_EQ(RegionRange({}, 99, 1).status().code(), ErrorCode::kNotFound);
  // A table that does not fit its delivery (a damaged index) is not believed.
  EXPECT_EQ(RegionRange({10, UINT64_MAX}, 15, 1).status().code(), ErrorCode::kMalformed);
}

DeliveryMeta RegionMeta(const std::string& id, const std::vector<uint8_t>& bytes) {
  DeliveryMeta meta = MetaFor(id, bytes, 4096);
  meta.region_lengths = {4096, 0, bytes.size() - 4096};
  return meta;
}

TEST(RegionTable, TheDurableStoreKeepsItAcrossAReopen) {
  TempDir dir;
  const auto bytes = Bytes(11, 10000);
  {
    auto store = DurableStore::Open(dir.path(), DurableOptions{});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE(
        StoreDelivery(**store, RegionMeta("sg", bytes), bytes, RetentionClass::kProcessRestart)
            .status.ok());
    ASSERT_TRUE(
        StoreDelivery(**store, MetaFor("plain", bytes), bytes, RetentionClass::kProcessRestart)
            .status.ok());
  }
  auto store = DurableStore::Open(dir.path(), DurableOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto held = (*store)->Lookup("sg");
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_EQ((*held)->meta.region_lengths, (std::vector<uint64_t>{4096, 0, 10000 - 4096}));
  auto row = (*store)->Find("sg");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->region_lengths, (*held)->meta.region_lengths);
  auto plain = (*store)->Lookup("plain");
  ASSERT_TRUE(plain.ok() && plain->has_value());
  EXPECT_TRUE((*plain)->meta.region_lengths.empty());
}

TEST(RegionTable, AnIndexFromBeforeTheColumnReadsAsPlain) {
  TempDir dir;
  const auto bytes = Bytes(12, 5000);
  {
    auto store = DurableStore::Open(dir.path(), DurableOptions{});
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(
        StoreDelivery(**store, MetaFor("old", bytes), bytes, RetentionClass::kProcessRestart)
            .status.ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path() + "/index.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(
      sqlite3_exec(db, "ALTER TABLE deliveries DROP COLUMN regions", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  DurableOptions read_only;
  read_only.read_only = true;
  auto ro = DurableStore::Open(dir.path(), read_only);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  auto row = (*ro)->Find("old");
  ASSERT_TRUE(row.ok() && row->has_value()) << row.status().ToString();
  EXPECT_TRUE((*row)->region_lengths.empty());
  auto store = DurableStore::Open(dir.path(), DurableOptions{});  // adds the column back
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto held = (*store)->Lookup("old");
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_TRUE((*held)->meta.region_lengths.empty());
}

TEST(RegionTable, TheVolatileStoreKeepsIt) {
  auto store = VolatileStore::Open("", 1 << 20);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const auto bytes = Bytes(13, 9000);
  ASSERT_TRUE(StoreDelivery(**store, RegionMeta("sg", bytes), bytes, RetentionClass::kVolatile)
                  .status.ok());
  auto held = (*store)->Lookup("sg");
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_EQ((*held)->meta.region_lengths, (std::vector<uint64_t>{4096, 0, 9000 - 4096}));
}

}  // namespace
}  // namespace writ::store::testing
