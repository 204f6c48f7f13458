// The data directory's own rules: fresh or damaged, one writer at a time, re-verification
// before an answer, the scrub and the quarantine (docs/retention.md).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "store/durable_store.h"
#include "store/quarantine.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

using ::testing::HasSubstr;

Result<std::unique_ptr<DurableStore>> Open(const std::string& dir, bool read_only = false) {
  DurableOptions options;
  options.read_only = read_only;
  return DurableStore::Open(dir, options);
}

void Flip(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, 10), 1);
  b ^= 0x01;
  ASSERT_EQ(::pwrite(fd, &b, 1, 10), 1);
  ::close(fd);
}

std::string Location(DurableStore& store, const std::string& id) {
  auto row = store.Find(id);
  EXPECT_TRUE(row.ok() && row->has_value());
  return row.ok() && *row ? (*row)->location : "";
}

TEST(DataDir, ASecondWritingOpenIsRefusedWhileReadOnlyOpensWork) {
  TempDir dir;
  auto first = Open(dir.path() + "/d");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = Open(dir.path() + "/d");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kRetention);
  EXPECT_THAT(second.status().message(), HasSubstr("in use by another writ process"));
  EXPECT_TRUE(Open(dir.path() + "/d", true).ok()) << "readers take no lock";
  first->reset();
  EXPECT_TRUE(Open(dir.path() + "/d").ok()) << "the lock goes with its owner";
}

TEST(DataDir, FreshDirectoriesAreInitialisedAndDamagedOnesRefused) {
  TempDir dir;
  const std::string d = dir.path() + "/d";
  std::filesystem::create_directories(d + "/payloads");  // a first start that died early
  {
    auto store = Open(d);
    ASSERT_TRUE(store.ok()) << "an empty payloads/ without an index is still fresh";
    const auto bytes = Bytes(1, 5000);
    ASSERT_TRUE(
        StoreDelivery(**store, MetaFor("a", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  }
  std::filesystem::rename(d + "/index.db", dir.path() + "/index.away");
  auto no_index = Open(d);
  ASSERT_FALSE(no_index.ok());
  EXPECT_EQ(no_index.status().code(), ErrorCode::kRetention);
  EXPECT_THAT(no_index.status().message(), HasSubstr("index.db is missing"));
  std::filesystem::rename(dir.path() + "/index.away", d + "/index.db");
  std::filesystem::rename(d + "/payloads", dir.path() + "/payloads.away");
  auto no_payloads = Open(d);
  ASSERT_FALSE(no_payloads.ok());
  EXPECT_THAT(no_payloads.status().message(), HasSubstr("payloads is missing"));
  std::filesystem::rename(dir.path() + "/payloads.away", d + "/payloads");
  auto back = Open(d);
  ASSERT_TRUE(back.ok());
  auto held = (*back)->Lookup("a");
  EXPECT_TRUE(held.ok() && held->has_value()) << "nothing was dropped while it was refused";
}

TEST(DataDir, LookupVerifiedQuarantinesAPayloadDamagedInPlace) {
  TempDir dir;
  auto store = Open(dir.path());
  ASSERT_TRUE(store.ok());
  const auto bytes = Bytes(2, 70000);
  ASSERT_TRUE(
      StoreDelivery(**store, MetaFor("x", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  auto good = (*store)->LookupVerified("x");
  ASSERT_TRUE(good.ok() && good->has_value());
  const std::string location = Location(**store, "x");
  Flip(dir.path() + "/" + location);
  auto plain = (*store)->Lookup("x");
  EXPECT_TRUE(plain.ok() && plain->has_value()) << "Lookup alone does not read the bytes";
  auto verified = (*store)->LookupVerified("x");
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_FALSE(verified->has_value()) << "damaged bytes must not be reported retained";
  auto gone = (*store)->Lookup("x");
  EXPECT_TRUE(gone.ok() && !gone->has_value()) << "its row is dropped";
  auto q = ListQuarantine(Env::Default(), dir.path());
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u);
  EXPECT_THAT((*q)[0].why, HasSubstr("x (power-loss, 70000 bytes"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/quarantine/" + (*q)[0].name));
  // A re-send stores it again.
  EXPECT_TRUE(
      StoreDelivery(**store, MetaFor("x", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
  EXPECT_EQ(ReadAll(**store, "x", bytes.size()), bytes);
}

// An answer from the store re-hashes a payload once per DurableOptions::verified_for, not
// once per question: before, each of an unsigned peer's 60-byte queries re-hashed the whole
// delivery. A payload written since its re-hash is re-hashed (and here quarantined) again.
TEST(DataDir, AnswersReHashAPayloadOncePerStampNotOncePerQuestion) {
  TempDir dir;
  auto store = Open(dir.path());
  ASSERT_TRUE(store.ok());
  const auto bytes = Bytes(5, 300000);
  ASSERT_TRUE(StoreDelivery(**store, MetaFor("asked", bytes), bytes, RetentionClass::kPowerLoss)
                  .status.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its times settle
  const uint64_t before = (*store)->rehashes();
  for (int i = 0; i < 100; ++i) {
    auto held = (*store)->LookupVerified("asked");
    ASSERT_TRUE(held.ok() && held->has_value());
  }
  EXPECT_EQ((*store)->rehashes() - before, 1u) << "100 questions, one re-hash";
  Flip(dir.path() + "/" + Location(**store, "asked"));
  auto damaged = (*store)->LookupVerified("asked");
  ASSERT_TRUE(damaged.ok()) << damaged.status().ToString();
  EXPECT_FALSE(damaged->has_value()) << "a payload written since its stamp is re-hashed";
  EXPECT_EQ((*store)->rehashes() - before, 2u);
}

TEST(DataDir, WithoutAStampWindowEveryAnswerReHashes) {
  TempDir dir;
  DurableOptions options;
  options.verified_for = std::chrono::milliseconds(0);
  auto store = DurableStore::Open(dir.path(), options);
  ASSERT_TRUE(store.ok());
  const auto bytes = Bytes(6, 5000);
  ASSERT_TRUE(StoreDelivery(**store, MetaFor("each", bytes), bytes, RetentionClass::kPowerLoss)
                  .status.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const uint64_t before = (*store)->rehashes();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*store)->LookupVerified("each").ok());
  EXPECT_EQ((*store)->rehashes() - before, 3u);
}

TEST(DataDir, TheScrubQuarantinesWhatFailsAndLogsIt) {
  TempDir dir;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  DurableOptions options;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mu);
    lines.push_back(line);
    cv.notify_all();
  };
  const auto bytes = Bytes(3, 9000);
  {
    auto store = Open(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(
        StoreDelivery(**store, MetaFor("s", bytes), bytes, RetentionClass::kPowerLoss).status.ok());
    Flip(dir.path() + "/" + Location(**store, "s"));
  }
  options.scrub_bytes_per_second = 1 << 30;
  auto store = DurableStore::Open(dir.path(), options);  // power-loss: a size check only
  ASSERT_TRUE(store.ok());
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::minutes(2), [&] { return !lines.empty(); }));
  EXPECT_THAT(lines[0], HasSubstr("delivery s (power-loss"));
  EXPECT_THAT(lines[0], HasSubstr("the scrub found"));
  EXPECT_THAT(lines[0], HasSubstr("quarantined"));
  lock.unlock();
  auto held = (*store)->Lookup("s");
  EXPECT_TRUE(held.ok() && !held->has_value());
}

TEST(DataDir, PurgeDeletesOnlyQuarantinedFiles) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/payloads");
  std::ofstream(dir.path() + "/payloads/p0000000000000001.dat") << "unexplained";
  ASSERT_TRUE(MoveToQuarantine(Env::Default(), dir.path(), "payloads/p0000000000000001.dat",
                               "a test put it there")
                  .ok());
  auto q = ListQuarantine(Env::Default(), dir.path());
  ASSERT_TRUE(q.ok() && q->size() == 1u);
  EXPECT_EQ((*q)[0].why, "a test put it there");
  EXPECT_EQ(PurgeQuarantine(Env::Default(), dir.path(), {"../index.db"}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(PurgeQuarantine(Env::Default(), dir.path(), {"p00000000000000ff.dat"}).code(),
            ErrorCode::kNotFound);
  ASSERT_TRUE(PurgeQuarantine(Env::Default(), dir.path(), {}).ok());
  q = ListQuarantine(Env::Default(), dir.path());
  EXPECT_TRUE(q.ok() && q->empty());
}

TEST(DataDir, OnlyTheStoresOwnPayloadNamesAreEverOpened) {
  EXPECT_TRUE(IsPayloadLocation("payloads/p000000000000002a.dat"));
  EXPECT_FALSE(IsPayloadLocation("../secret"));
  EXPECT_FALSE(IsPayloadLocation("payloads/../../etc/passwd"));
  EXPECT_FALSE(IsPayloadLocation("payloads/p000000000000002a.tmp"));
  EXPECT_FALSE(IsPayloadLocation("payloads/p000000000000002A.dat"));
  EXPECT_FALSE(IsPayloadLocation("/payloads/p000000000000002a.dat"));
}

}  // namespace
}  // namespace writ::store::testing
