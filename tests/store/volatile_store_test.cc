// The volatile store in memory (memfd) and in a scratch directory: bytes written or
// placed in place by the transport read back identically, capacity is enforced by name,
// and the evidence says which of the two happened.
#include "store/volatile_store.h"

#include <cstring>

#include "store_test_util.h"

namespace writ::store::testing {
namespace {

// Counts the memory calls the writer makes.
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::Default()) {}
  Status Allocate(int fd, uint64_t offset, uint64_t length, bool keep_size) override {
    ++allocations;
    allocated += length;
    if (fail_allocation) return Status::Io("fallocate: ENOMEM (test)", ENOMEM);
    return EnvWrapper::Allocate(fd, offset, length, keep_size);
  }
  Result<uint8_t*> MapShared(int fd, uint64_t length) override {
    ++maps;
    return EnvWrapper::MapShared(fd, length);
  }
  Status WriteAt(int fd, std::span<const uint8_t> b, uint64_t off) override {
    ++writes;
    return EnvWrapper::WriteAt(fd, b, off);
  }
  int allocations = 0, maps = 0, writes = 0;
  uint64_t allocated = 0;
  bool fail_allocation = false;
};

std::unique_ptr<VolatileStore> InMemory(Env* env, uint64_t capacity = 1ull << 30) {
  auto store = VolatileStore::Open("", capacity, env);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(VolatileStore, InMemoryWritesReadBackAndSayMemfd) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(1, 3 * 1000 + 17);
  const DeliveryMeta meta = MetaFor("m", bytes, 1000);
  Stored stored = StoreDelivery(*store, meta, bytes, RetentionClass::kVolatile);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  EXPECT_EQ(ReadAll(*store, "m", bytes.size()), bytes);
  EXPECT_EQ(env.writes, 4) << "copied: one pwrite per chunk";
  EXPECT_EQ(env.maps, 0);
  EXPECT_NE(stored.evidence->acknowledged_point.find("memfd"), std::string::npos);
  EXPECT_NE(stored.evidence->acknowledged_point.find("written (pwrite)"), std::string::npos);
}

TEST(VolatileStore, PlacedBytesAreStoredWithoutACopy) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(2, 300 * 4096 + 100);  // placement is for deliveries from 1 MiB
  const DeliveryMeta meta = MetaFor("placed", bytes, 4096);
  auto writer = store->Begin(meta, RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  // Two windows: the first three chunks, then the rest, as the receiver grants them.
  auto first = (*writer)->Placement(0, 3 * 4096);
  auto second = (*writer)->Placement(3 * 4096, bytes.size() - 3 * 4096);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_NE(*first, nullptr);
  EXPECT_EQ(*second, *first + 3 * 4096) << "one mapping of the whole delivery";
  std::memcpy(*first, bytes.data(), bytes.size());  // what the transport's writes do
  for (uint64_t off = 0; off < bytes.size(); off += 4096) {
    const size_t n = std::min<size_t>(4096, bytes.size() - off);
    ASSERT_TRUE((*writer)->Write(off, std::span<const uint8_t>(*first + off, n)).ok());
  }
  EXPECT_EQ(env.writes, 0) << "placed bytes are not copied";
  EXPECT_EQ(env.maps, 1);
  EXPECT_GE(env.allocated, bytes.size()) << "memory allocated before the bytes land";
  auto ev = (*writer)->Commit({"{}"});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_NE(ev->acknowledged_point.find("placed by the transport"), std::string::npos);
  EXPECT_NE(ev->evidence.find(std::to_string(bytes.size()) + " bytes placed"), std::string::npos)
      << ev->evidence;
  writer->reset();  // unmaps; the store keeps the memory file
  EXPECT_EQ(ReadAll(*store, "placed", bytes.size()), bytes);
}

TEST(VolatileStore, APlacementPastTheEndOrWithoutMemoryIsAnError) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(3, 2 << 20);
  auto writer = store->Begin(MetaFor("p", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ((*writer)->Placement(4096, 2 << 20).status().code(), ErrorCode::kInvalidArgument);
  env.fail_allocation = true;
  auto refused = (*writer)->Placement(0, 2 << 20);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("allocating memory for p"), std::string::npos)
      << refused.status().ToString();
}

TEST(VolatileStore, SmallDeliveriesAreCopiedNotMapped) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(5, 4096);
  auto writer = store->Begin(MetaFor("small", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  auto placement = (*writer)->Placement(0, bytes.size());
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(*placement, nullptr);
  EXPECT_EQ(env.maps, 0);
}

TEST(VolatileStore, AScratchDirectoryHasNoPlacementAndCapacityIsEnforced) {
  TempDir scratch;
  auto store = VolatileStore::Open(scratch.path(), 10000);
  ASSERT_TRUE(store.ok());
  const auto bytes = Bytes(4, 6000);
  auto writer = (*store)->Begin(MetaFor("s", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  auto placement = (*writer)->Placement(0, bytes.size());
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(*placement, nullptr) << "files in a scratch directory are written, not mapped";
  auto second = (*store)->Begin(MetaFor("t", bytes), RetentionClass::kVolatile);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kRefused);
  EXPECT_NE(second.status().message().find("free capacity of 4000 bytes"), std::string::npos)
      << second.status().ToString();
  EXPECT_FALSE((*store)->Begin(MetaFor("d", bytes), RetentionClass::kPowerLoss).ok());
}

}  // namespace
}  // namespace writ::store::testing
