// The volatile store in memory (anonymous memory on huge pages, or a memfd where the kernel
// refuses that mapping) and in a scratch directory: bytes written or placed in place by the
// transport read back identically, capacity is enforced by name, and the evidence says which
// of them happened.
#include "store/volatile_store.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "store/volatile_arena.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

// Counts the memory calls the writer makes.
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::Default()) {}
  Status Allocate(int fd, uint64_t offset, uint64_t length, bool keep_size) override {
    ++allocations;
    if (fail_allocation) return Status::Io("fallocate: ENOMEM (test)", ENOMEM);
    return EnvWrapper::Allocate(fd, offset, length, keep_size);
  }
  Result<uint8_t*> MapMemory(uint64_t length, uint64_t align) override {
    if (refuse_anonymous) return Status::Io("mmap (anonymous memory): ENOMEM (test)", ENOMEM);
    ++new_maps;
    ++anonymous_maps;
    return EnvWrapper::MapMemory(length, align);
  }
  Status DiscardMemory(uint8_t* address, uint64_t length) override {
    ++discards;
    return EnvWrapper::DiscardMemory(address, length);
  }
  Status Discard(int fd, uint64_t offset, uint64_t length) override {
    ++discards;
    return EnvWrapper::Discard(fd, offset, length);
  }
  Status MapSharedAt(uint8_t* address, int fd, uint64_t length) override {
    ++maps;
    return EnvWrapper::MapSharedAt(address, fd, length);
  }
  Result<uint8_t*> MapShared(int fd, uint64_t length) override {
    ++new_maps;
    return EnvWrapper::MapShared(fd, length);
  }
  Status Unmap(uint8_t* address, uint64_t length) override {
    ++unmaps;
    return EnvWrapper::Unmap(address, length);
  }
  // Provisioning memory: a memory file's fallocate, then this; anonymous memory this alone.
  Status Populate(uint8_t* address, uint64_t length) override {
    ++populates;
    populated += length;
    if (fail_allocation) return Status::Io("madvise(MADV_POPULATE_WRITE): ENOMEM (test)", ENOMEM);
    return EnvWrapper::Populate(address, length);
  }
  Result<int> OpenMemory(const std::string& name) override {
    ++memory_files;
    return EnvWrapper::OpenMemory(name);
  }
  Status WriteAt(int fd, std::span<const uint8_t> b, uint64_t off) override {
    ++writes;
    return EnvWrapper::WriteAt(fd, b, off);
  }
  std::atomic<int> allocations = 0, maps = 0, writes = 0, populates = 0, memory_files = 0;
  std::atomic<int> new_maps = 0, unmaps = 0, anonymous_maps = 0, discards = 0;
  std::atomic<uint64_t> populated = 0;
  bool fail_allocation = false;
  bool refuse_anonymous = false;
};

std::unique_ptr<VolatileStore> InMemory(Env* env, uint64_t capacity = 1ull << 30) {
  auto store = VolatileStore::Open("", capacity, env);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(VolatileStore, InMemoryWritesReadBackAndSayAnonymousMemory) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(1, 3 * 1000 + 17);
  const DeliveryMeta meta = MetaFor("m", bytes, 1000);
  Stored stored = StoreDelivery(*store, meta, bytes, RetentionClass::kVolatile);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  EXPECT_EQ(ReadAll(*store, "m", bytes.size()), bytes);
  EXPECT_EQ(env.writes, 0) << "copied into the store's one mapping: no system call";
  EXPECT_EQ(env.maps, 0);
  EXPECT_EQ(env.new_maps, 1) << "the store's memory is mapped once, when it opens";
  EXPECT_EQ(env.anonymous_maps, 1);
  EXPECT_EQ(env.memory_files, 0) << "no memory file: anonymous memory";
  EXPECT_EQ(env.allocations, 0) << "no fallocate: anonymous memory is provisioned by madvise";
  const std::string& point = stored.evidence->acknowledged_point;
  EXPECT_NE(point.find("(anonymous memory, mapped once"), std::string::npos) << point;
  EXPECT_EQ(point.find("memfd"), std::string::npos) << point;
  EXPECT_NE(point.find("copied into"), std::string::npos);
  EXPECT_NE(stored.evidence->evidence.find("of the store's anonymous memory (host memory"),
            std::string::npos)
      << stored.evidence->evidence;
}

// Where the kernel refuses a private mapping of the whole capacity (a strict overcommit
// policy charges it all at once), the store's memory is one memory file instead, and its
// receipts say so.
TEST(VolatileStore, WithoutAnonymousMemoryTheStoreUsesAMemoryFileAndSaysMemfd) {
  CountingEnv env;
  env.refuse_anonymous = true;
  auto store = InMemory(&env);
  const auto bytes = Bytes(1, 3 * 1000 + 17);
  Stored stored =
      StoreDelivery(*store, MetaFor("m", bytes, 1000), bytes, RetentionClass::kVolatile);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  EXPECT_EQ(ReadAll(*store, "m", bytes.size()), bytes);
  EXPECT_EQ(env.memory_files, 1);
  EXPECT_EQ(env.new_maps, 1) << "the memory file is mapped once, when the store opens";
  EXPECT_EQ(env.writes, 0) << "copied into the file's mapping: no system call";
  EXPECT_GE(env.allocations, 1) << "a memory file's pages are allocated (fallocate) first";
  const std::string& point = stored.evidence->acknowledged_point;
  EXPECT_NE(point.find("an anonymous memory file, memfd, mapped once"), std::string::npos) << point;
  EXPECT_NE(stored.evidence->evidence.find("of the memory file (host memory"), std::string::npos)
      << stored.evidence->evidence;
}

// Transparent huge pages where the kernel offers them for madvised memory: the slab a small
// delivery lands in is backed by 2 MiB pages (/proc/self/smaps), so its first writes take
// one fault per 2 MiB, not one per 4 KiB page.
TEST(VolatileStore, SmallDeliveriesLandOnHugePagesWhereTheKernelOffersThem) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string policy((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  if (policy.find("[never]") != std::string::npos || policy.empty()) {
    GTEST_SKIP() << "transparent huge pages are off on this kernel ("
                 << (policy.empty() ? "no /sys/kernel/mm/transparent_hugepage" : policy) << ")";
  }
  auto store = InMemory(Env::Default());
  const auto bytes = Bytes(4, 4096);
  Stored stored = StoreDelivery(*store, MetaFor("huge", bytes), bytes, RetentionClass::kVolatile);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  auto view = store->View("huge", 0, bytes.size());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const auto address = reinterpret_cast<uintptr_t>(view->bytes.data());
  // The mapping that holds it, and its AnonHugePages line.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  uint64_t huge_kb = 0;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2) {  // a mapping's first line
      inside = address >= from && address < to;
      continue;
    }
    unsigned long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lu kB", &kb) == 1) huge_kb = kb;
  }
  EXPECT_GE(huge_kb, 2048u) << "the slab's memory is on 4 KiB pages (THP policy: " << policy << ")";
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
  EXPECT_EQ(env.maps, 0);
  EXPECT_EQ(env.new_maps, 1) << "placed in the mapping the store made when it opened";
  EXPECT_GE(env.populated, bytes.size()) << "memory provisioned before the bytes land";
  auto ev = (*writer)->Commit({"{}"});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_NE(ev->acknowledged_point.find("placed by the transport"), std::string::npos);
  EXPECT_NE(ev->evidence.find(std::to_string(bytes.size()) + " bytes placed"), std::string::npos)
      << ev->evidence;
  writer->reset();
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

TEST(VolatileStore, ASupersededDeliveryIsDroppedAndItsCapacityGivenBack) {
  TempDir scratch;
  auto store = VolatileStore::Open(scratch.path(), 10000);
  ASSERT_TRUE(store.ok());
  const auto bytes = Bytes(6, 6000);
  ASSERT_TRUE(
      StoreDelivery(**store, MetaFor("up", bytes), bytes, RetentionClass::kVolatile).status.ok());
  EXPECT_FALSE(
      StoreDelivery(**store, MetaFor("next", bytes), bytes, RetentionClass::kVolatile).status.ok())
      << "the capacity holds one";
  ASSERT_TRUE((*store)->DropSuperseded("up").ok());
  auto gone = (*store)->Lookup("up");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  EXPECT_TRUE(
      StoreDelivery(**store, MetaFor("next", bytes), bytes, RetentionClass::kVolatile).status.ok())
      << "its capacity was given back";
  EXPECT_TRUE((*store)->DropSuperseded("never-held").ok());
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
  // The capacity is taken as ranges are placed (windows granted), not at Begin.
  auto second = (*store)->Begin(MetaFor("t", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto refused = (*second)->Placement(0, bytes.size());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kRefused);
  EXPECT_NE(refused.status().message().find("capacity of 10000 bytes has 4000 free"),
            std::string::npos)
      << refused.status().ToString();
  auto never = (*store)->Begin(MetaFor("u", Bytes(5, 10001)), RetentionClass::kVolatile);
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.status().message().find("exceeds the volatile store's capacity of 10000"),
            std::string::npos)
      << never.status().ToString();
  EXPECT_FALSE((*store)->Begin(MetaFor("d", bytes), RetentionClass::kPowerLoss).ok());
}

size_t OpenDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(VolatileStore, RetainedDeliveriesHoldNoDescriptor) {
  auto store = InMemory(nullptr);
  const size_t before = OpenDescriptors();
  std::vector<std::vector<uint8_t>> held;
  for (int i = 0; i < 50; ++i) {
    held.push_back(Bytes(static_cast<uint64_t>(i), 3000 + static_cast<size_t>(i)));
    auto writer =
        store->Begin(MetaFor("r" + std::to_string(i), held.back()), RetentionClass::kVolatile);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write(0, held.back()).ok());
    ASSERT_TRUE((*writer)->Commit({}).ok());
  }
  EXPECT_EQ(OpenDescriptors(), before);
  for (int i = 0; i < 50; ++i) {
    std::vector<uint8_t> out(held[static_cast<size_t>(i)].size());
    ASSERT_TRUE(store->Read("r" + std::to_string(i), 0, out).ok());
    EXPECT_EQ(out, held[static_cast<size_t>(i)]) << "r" << i;
  }
}

// Small extents, so that a test delivery spans several.
constexpr uint64_t kSmallExtent = 64 << 10;

std::unique_ptr<VolatileStore> WithSmallExtents(
    Env* env, uint64_t reserve = 0, std::function<void(const std::string&)> on_event = nullptr,
    uint64_t reserve_limit = 0) {
  VolatileStore::Options options;
  options.capacity = 1ull << 30;
  options.extent_bytes = kSmallExtent;
  options.reserve = reserve;
  options.reserve_limit = reserve_limit;
  options.on_event = std::move(on_event);
  auto store = VolatileStore::Open(std::move(options), env);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(VolatileStore, PlacementsAcrossExtentsAreOneContiguousRange) {
  CountingEnv env;
  auto store = WithSmallExtents(&env);
  const auto bytes = Bytes(6, (1 << 20) + 3000);  // 16 whole extents and a short one
  auto writer = store->Begin(MetaFor("x", bytes, 40000), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  // Windows that start and end inside extents, as the receiver grants them.
  auto first = (*writer)->Placement(0, 100000);
  auto second = (*writer)->Placement(100000, bytes.size() - 100000);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status().ToString();
  ASSERT_NE(*first, nullptr);
  EXPECT_EQ(*second, *first + 100000);
  std::memcpy(*first, bytes.data(), bytes.size());
  for (uint64_t off = 0; off < bytes.size(); off += 40000) {
    const size_t n = std::min<size_t>(40000, bytes.size() - off);
    ASSERT_TRUE((*writer)->Write(off, std::span<const uint8_t>(*first + off, n)).ok());
  }
  EXPECT_EQ(env.writes, 0);
  EXPECT_EQ(env.maps, 0);
  EXPECT_EQ(env.new_maps, 1) << "no mapping per delivery or extent";
  std::vector<uint8_t> across(5000);
  ASSERT_TRUE((*writer)->Read(kSmallExtent - 2500, across).ok());
  EXPECT_EQ(0, std::memcmp(across.data(), bytes.data() + kSmallExtent - 2500, across.size()));
  auto ev = (*writer)->Commit({"{}"});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_NE(ev->evidence.find("17 piece(s) of the store's anonymous memory"), std::string::npos)
      << ev->evidence;
  writer->reset();
  EXPECT_EQ(env.new_maps, 1) << "the retained delivery stays where its bytes landed";
  EXPECT_EQ(env.unmaps, 0) << "no page walk of the delivery on its way to retained";
  EXPECT_EQ(ReadAll(*store, "x", bytes.size()), bytes);
}

TEST(VolatileStore, CopiedBytesAcrossExtentsReadBack) {
  CountingEnv env;
  auto store = WithSmallExtents(&env);
  const auto bytes = Bytes(7, 3 * kSmallExtent + 123);  // copied: under the placement size
  Stored stored =
      StoreDelivery(*store, MetaFor("c", bytes, 50000), bytes, RetentionClass::kVolatile);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  EXPECT_EQ(ReadAll(*store, "c", bytes.size()), bytes);
  std::vector<uint8_t> past(10);
  EXPECT_EQ(store->Read("c", bytes.size() - 5, past).code(), ErrorCode::kInvalidArgument);
}

// Waits for the store's "reserve ready" event.
class ReserveEvents {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mu_);
      lines_.push_back(line);
      cv_.notify_all();
    };
  }
  bool WaitReady() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      return !lines_.empty() && lines_.back().find("ready") != std::string::npos;
    });
  }
  // Waits until the reserve has said it is ready `n` times.
  bool WaitReadyTimes(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      return std::count_if(lines_.begin(), lines_.end(), [](const std::string& l) {
               return l.find("reserve ready") != std::string::npos;
             }) >= static_cast<std::ptrdiff_t>(n);
    });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

TEST(VolatileStore, AReserveIsTouchedAheadAndDeliveriesLandInIt) {
  CountingEnv env;
  ReserveEvents events;
  auto store = WithSmallExtents(&env, 4 * kSmallExtent, events.sink());
  ASSERT_TRUE(events.WaitReady()) << "the reserve never said it was ready";
  EXPECT_NE(events.lines_.front().find("volatile reserve ready"), std::string::npos);
  EXPECT_EQ(store->ready_extents(), 4u);

  const auto bytes = Bytes(8, 17 * kSmallExtent + 10);  // placed: from 1 MiB
  auto writer = store->Begin(MetaFor("r", bytes, kSmallExtent), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  const int populates_before = env.populates;
  auto placed = (*writer)->Placement(0, 3 * kSmallExtent);
  ASSERT_TRUE(placed.ok() && *placed != nullptr);
  EXPECT_EQ(env.populates, populates_before)
      << "reserve extents arrive with their pages mapped: nothing to fault in";
  auto rest = (*writer)->Placement(3 * kSmallExtent, bytes.size() - 3 * kSmallExtent);
  ASSERT_TRUE(rest.ok());
  std::memcpy(*placed, bytes.data(), bytes.size());
  for (uint64_t off = 0; off < bytes.size(); off += kSmallExtent) {
    const size_t n = std::min<size_t>(kSmallExtent, bytes.size() - off);
    ASSERT_TRUE((*writer)->Write(off, std::span<const uint8_t>(*placed + off, n)).ok());
  }
  auto ev = (*writer)->Commit({"{}"});
  ASSERT_TRUE(ev.ok());
  // The four ready extents at least (the reserve refills meanwhile, so maybe more).
  const size_t warm = ev->evidence.find(" from the touched reserve");
  ASSERT_NE(warm, std::string::npos) << ev->evidence;
  const size_t comma = ev->evidence.rfind(", ", warm);
  EXPECT_GE(std::stoi(ev->evidence.substr(comma + 2, warm - comma - 2)), 4) << ev->evidence;
  writer->reset();
  EXPECT_EQ(ReadAll(*store, "r", bytes.size()), bytes) << "reserve memory holds the delivery";
}

// A sender can notify chunks without writing them: memory that held an abandoned
// delivery's bytes must never be where the next delivery is placed.
TEST(VolatileStore, AnAbandonedDeliveryLeavesNoByteForTheNextOne) {
  CountingEnv env;
  ReserveEvents events;
  auto store = WithSmallExtents(&env, 2 * kSmallExtent, events.sink());
  ASSERT_TRUE(events.WaitReady());
  const auto bytes = Bytes(9, 32 * kSmallExtent);  // placed: from 1 MiB
  {
    auto writer = store->Begin(MetaFor("a", bytes), RetentionClass::kVolatile);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write(0, bytes).ok());
    // Dropped without Commit: the sender went away.
  }
  // Its extents are recycled into the reserve, cleared; the next delivery starts once that is
  // done (one started meanwhile gets fresh extents first, then recycled ones that are not
  // beside them, and could not be placed as one range).
  ASSERT_TRUE(events.WaitReadyTimes(2)) << "the reserve was not refilled";
  EXPECT_LE(store->ready_extents(), 2u) << "never more than the reserve's size";
  auto gone = store->Lookup("a");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto next = store->Begin(MetaFor("b", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(next.ok()) << "its capacity was released";
  auto placed = (*next)->Placement(0, bytes.size());
  ASSERT_TRUE(placed.ok() && *placed != nullptr)
      << (placed.ok() ? "not placed as one range" : placed.status().ToString());
  const std::vector<uint8_t> zeros(bytes.size(), 0);
  EXPECT_EQ(std::memcmp(*placed, zeros.data(), zeros.size()), 0)
      << "the next delivery's memory shows bytes of the abandoned one";
}

// Writes `bytes` (copied, not placed) and commits or abandons the delivery.
void Deliver(VolatileStore& store, const std::string& id, const std::vector<uint8_t>& bytes,
             bool commit) {
  auto writer = store.Begin(MetaFor(id, bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Write(0, bytes).ok());
  if (commit) {
    ASSERT_TRUE((*writer)->Commit({"{}"}).ok());
  }
}

TEST(VolatileStore, AnAdaptiveReserveGrowsToTheLargestDeliveryUpToItsLimit) {
  CountingEnv env;
  ReserveEvents events;
  auto store = WithSmallExtents(&env, 0, events.sink(), /*reserve_limit=*/3 * kSmallExtent);
  EXPECT_EQ(store->target_extents(), 0u) << "nothing touched before anything is asked";
  Deliver(*store, "one", Bytes(10, 2 * kSmallExtent + 7), true);
  EXPECT_EQ(store->target_extents(), 2u) << "whole extents of the largest delivery";
  ASSERT_TRUE(events.WaitReadyTimes(1));
  EXPECT_EQ(store->ready_extents(), 2u);
  Deliver(*store, "big", Bytes(11, 5 * kSmallExtent), true);
  EXPECT_EQ(store->target_extents(), 3u) << "never above its limit";
  ASSERT_TRUE(events.WaitReadyTimes(2));
  EXPECT_EQ(store->ready_extents(), 3u);
  Deliver(*store, "small", Bytes(12, kSmallExtent), true);
  EXPECT_EQ(store->target_extents(), 3u) << "a smaller delivery does not shrink it";
}

// An abandoned delivery's extents are kept for the reserve instead of new memory, and
// cleared before the next delivery can see any of their bytes.
TEST(VolatileStore, AnAbandonedDeliverysMemoryIsRecycledClearedIntoTheReserve) {
  CountingEnv env;
  ReserveEvents events;
  // 16 extents: 1 MiB, placed in the store's memory from that size.
  auto store = WithSmallExtents(&env, 0, events.sink(), /*reserve_limit=*/16 * kSmallExtent);
  std::vector<uint8_t> bytes(16 * kSmallExtent, 0xA5);
  Deliver(*store, "abandoned", bytes, /*commit=*/false);
  const int provisioned = env.populates;
  ASSERT_TRUE(events.WaitReadyTimes(1));
  EXPECT_EQ(store->ready_extents(), 16u);
  EXPECT_EQ(env.populates, provisioned) << "the reserve was filled with the abandoned extents";

  auto next = store->Begin(MetaFor("next", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(next.ok());
  auto placed = (*next)->Placement(0, bytes.size());
  ASSERT_TRUE(placed.ok() && *placed != nullptr);
  EXPECT_EQ(env.populates, provisioned) << "the next delivery got the recycled extents";
  const std::vector<uint8_t> zeros(bytes.size(), 0);
  EXPECT_EQ(std::memcmp(*placed, zeros.data(), zeros.size()), 0)
      << "recycled memory shows bytes of the abandoned delivery";
}

size_t MappingsOfThisProcess() {
  std::ifstream maps("/proc/self/maps");
  return static_cast<size_t>(
      std::count(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>(), '\n'));
}

// #31: each retained delivery used to keep a mapping (and had a memory file of its own), so
// about 65,000 small ones exhausted vm.max_map_count and every later delivery failed.
TEST(VolatileStore, ManyTinyRetainedDeliveriesCostNoMappingOrDescriptorEach) {
  CountingEnv env;
  auto store = InMemory(&env);
  const size_t fds_before = OpenDescriptors();
  const int populates_before = env.populates;
  constexpr int kTiny = 20000;
  // The mappings are counted between the two halves: the first half's also grow by the
  // heap's own (an allocator maps a region for each size class it first uses: about 16
  // under ASan, varying from run to run), which says nothing about the store.
  size_t maps_at_half = 0;
  for (int i = 0; i < kTiny; ++i) {
    if (i == kTiny / 2) maps_at_half = MappingsOfThisProcess();
    const std::vector<uint8_t> byte{static_cast<uint8_t>(i)};
    auto writer = store->Begin(MetaFor("t" + std::to_string(i), byte), RetentionClass::kVolatile);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    ASSERT_TRUE((*writer)->Write(0, byte).ok());
    ASSERT_TRUE((*writer)->Commit({"{}"}).ok()) << "delivery " << i;
  }
  EXPECT_LT(MappingsOfThisProcess(), maps_at_half + 8)
      << "10,000 more retained deliveries took a mapping each (or one per few)";
  EXPECT_EQ(OpenDescriptors(), fds_before) << "a descriptor per retained delivery";
  EXPECT_EQ(env.memory_files, 0) << "no memory file: one range of anonymous memory";
  EXPECT_EQ(env.new_maps + env.maps, 1) << "mapped once";
  EXPECT_LE(env.populates - populates_before, 4)
      << "memory for small deliveries is provisioned 2 MiB at a time, not per delivery";
  for (int i : {0, 1, kTiny / 2, kTiny - 1}) {
    std::vector<uint8_t> out(1);
    ASSERT_TRUE(store->Read("t" + std::to_string(i), 0, out).ok());
    EXPECT_EQ(out[0], static_cast<uint8_t>(i)) << "t" << i;
  }
  const size_t free_while_held = store->free_extents();
  for (int i = 0; i < kTiny; ++i) {
    ASSERT_TRUE(store->Remove("t" + std::to_string(i), false, 0).ok());
  }
  EXPECT_EQ(store->used_bytes(), 0u);
  EXPECT_EQ(store->free_extents(), free_while_held + 1) << "the emptied slab is free again";
}

// A receiver whose small deliveries are removed as fast as they come (a KV cache consuming
// its blocks) empties its slab again and again: the emptied slab stays provisioned as the
// spare of its slot size, so the next delivery neither provisions memory nor finds the bytes
// of the last one.
TEST(VolatileStore, AnEmptiedSlabStaysProvisionedAndClearedForTheNextSmallDelivery) {
  CountingEnv env;
  auto store = InMemory(&env);
  const auto bytes = Bytes(21, 4096);
  // Stores `id` (checking that its memory reads as zeros first), returns where it landed and
  // removes it.
  const auto deliver_and_remove = [&](const std::string& id) -> const uint8_t* {
    auto writer = store->Begin(MetaFor(id, bytes), RetentionClass::kVolatile);
    EXPECT_TRUE(writer.ok());
    if (!writer.ok()) return nullptr;
    EXPECT_TRUE((*writer)->Placement(0, bytes.size()).ok());
    std::vector<uint8_t> seen(bytes.size());
    EXPECT_TRUE((*writer)->Read(0, seen).ok());
    EXPECT_EQ(seen, std::vector<uint8_t>(bytes.size(), 0)) << id << " sees the last one's bytes";
    EXPECT_TRUE((*writer)->Write(0, bytes).ok());
    EXPECT_TRUE((*writer)->Commit({"{}"}).ok());
    writer->reset();
    const uint8_t* where = nullptr;
    {
      auto view = store->View(id, 0, bytes.size());  // a view keeps the delivery's memory
      EXPECT_TRUE(view.ok());
      if (view.ok()) where = view->bytes.data();
    }
    EXPECT_TRUE(store->Remove(id, false, 0).ok());
    return where;
  };
  const uint8_t* where = deliver_and_remove("first");
  const int populates = env.populates;
  const int discards = env.discards;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(deliver_and_remove("next" + std::to_string(i)), where)
        << "the spare slab's first slot again";
  }
  EXPECT_EQ(env.populates, populates) << "memory provisioned again for a slab that emptied";
  EXPECT_EQ(env.discards, discards) << "memory given back each time the slab emptied";
}

// The spare keeps one provisioning step (2 MiB) of what its slab grew to, and it is given up,
// its memory with it, as soon as an extent is needed for anything else.
TEST(VolatileArena, ASpareSlabKeepsOneStepAndIsGivenUpWhenAnExtentIsNeeded) {
  CountingEnv env;
  constexpr uint64_t kExtent = 64ull << 20;
  auto arena = VolatileArena::Open(&env, "", kExtent, 2);
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  std::vector<uint64_t> slots;
  for (int i = 0; i < 1024; ++i) {  // 4 MiB of 4 KiB slots: two provisioning steps
    auto at = (*arena)->TakeSlot(4096);
    ASSERT_TRUE(at.ok()) << at.status().ToString();
    slots.push_back(*at);
  }
  EXPECT_EQ(env.populates, 2);
  EXPECT_EQ((*arena)->free_extents(), 1u);
  for (uint64_t at : slots) (*arena)->GiveSlot(at, 4096);
  EXPECT_EQ(env.discards, 1) << "the spare gives back all but its first 2 MiB";
  EXPECT_EQ((*arena)->free_extents(), 2u) << "a spare counts as free";
  EXPECT_EQ((*arena)->slabs(), 1u);

  auto again = (*arena)->TakeSlot(4096);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, slots.front()) << "the spare starts again from its first slot";
  EXPECT_EQ(env.populates, 2) << "its first 2 MiB stayed provisioned";
  (*arena)->GiveSlot(*again, 4096);

  auto one = (*arena)->TakeExtent(std::nullopt);
  auto two = (*arena)->TakeExtent(std::nullopt);
  ASSERT_TRUE(one && two) << "the spare was not given up for an extent";
  EXPECT_NE(*one, *two);
  EXPECT_EQ(env.discards, 2) << "the spare's memory went back to the host with it";
  EXPECT_EQ((*arena)->slabs(), 0u);
  EXPECT_FALSE((*arena)->TakeExtent(std::nullopt)) << "no third extent";
  EXPECT_EQ((*arena)->TakeSlot(64).status().code(), ErrorCode::kRefused);
}

// A retained delivery's receipt texts live in the arena, counted in the capacity: they read
// back in order however many are appended (moving to larger slots), a store without room for
// them refuses the commit by name and keeps nothing, and a removal gives all of it back.
TEST(VolatileStore, ReceiptTextsLiveInTheArenaAndCountInTheCapacity) {
  CountingEnv env;
  auto store = InMemory(&env, 1 << 20);
  const auto bytes = Bytes(15, 4096);
  auto writer = store->Begin(MetaFor("r", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Write(0, bytes).ok());
  const std::vector<std::string> first = {std::string(700, 'a'), std::string(900, 'b')};
  ASSERT_TRUE((*writer)->Commit(first).ok());
  EXPECT_EQ(store->used_bytes(), 4096u + 4096u) << "the bytes and a 4 KiB slot of texts";
  std::vector<std::string> all = first;
  for (int i = 0; i < 40; ++i) {  // well past the first slot
    all.push_back(std::string(100 + static_cast<size_t>(i) * 37, static_cast<char>('c' + i % 20)));
    ASSERT_TRUE(store->AppendReceipt("r", all.back()).ok()) << i;
  }
  auto held = store->Lookup("r");
  ASSERT_TRUE(held.ok() && held->has_value());
  ASSERT_EQ((*held)->receipts.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE((*held)->receipts[i] == all[i]) << "receipt " << i;
  }
  EXPECT_EQ(env.writes, 0) << "in memory: copied, no system call";
  EXPECT_EQ(ReadAll(*store, "r", bytes.size()), bytes);
  ASSERT_TRUE(store->Remove("r", false, 0).ok());
  EXPECT_EQ(store->used_bytes(), 0u) << "the texts' slot went back with the bytes";

  // Room for the bytes but not for the receipts: refused, nothing kept, capacity intact.
  auto tight = InMemory(nullptr, 8192);
  auto w = tight->Begin(MetaFor("t", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(0, bytes).ok());
  auto refused = (*w)->Commit({std::string(5000, 'x')});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("space"), std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("the receipts of delivery t need 8192 bytes"),
            std::string::npos)
      << refused.status().ToString();
  w->reset();
  EXPECT_EQ(tight->used_bytes(), 0u);
  auto none = tight->Lookup("t");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // Committed without receipts, then a receipt that does not fit: the commit is undone (the
  // delivery is not held without the receipts that say so) and its capacity given back.
  auto a = tight->Begin(MetaFor("a", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->Write(0, bytes).ok());
  ASSERT_TRUE((*a)->Commit({}).ok());
  a->reset();
  Status appended = tight->AppendReceipt("a", std::string(5000, 'y'));
  EXPECT_EQ(appended.code(), ErrorCode::kRefused) << appended.ToString();
  EXPECT_NE(appended.message().find("delivery a is not held"), std::string::npos)
      << appended.ToString();
  auto undone = tight->Lookup("a");
  ASSERT_TRUE(undone.ok());
  EXPECT_FALSE(undone->has_value());
  EXPECT_EQ(tight->used_bytes(), 0u);
}

// A slot is shared over time by deliveries of one size class: a removed delivery's bytes are
// cleared before the next one is placed there (a sender may notify chunks it never wrote).
TEST(VolatileStore, ARemovedDeliverysSlotIsClearedForTheNext) {
  auto store = InMemory(nullptr);
  const auto bytes = Bytes(13, (1 << 20) + 5);   // placed, in a 2 MiB slot
  const auto kept = Bytes(14, (1 << 20) + 100);  // the same slab: kept alive across the removal
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("keep", kept), kept, RetentionClass::kVolatile).status.ok());
  ASSERT_TRUE(
      StoreDelivery(*store, MetaFor("gone", bytes), bytes, RetentionClass::kVolatile).status.ok());
  ASSERT_TRUE(store->Remove("gone", false, 0).ok());
  auto next = store->Begin(MetaFor("next", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(next.ok());
  auto placed = (*next)->Placement(0, bytes.size());
  ASSERT_TRUE(placed.ok() && *placed != nullptr) << placed.status().ToString();
  const std::vector<uint8_t> zeros(bytes.size(), 0);
  EXPECT_EQ(std::memcmp(*placed, zeros.data(), zeros.size()), 0)
      << "the slot shows bytes of the removed delivery";
  EXPECT_EQ(ReadAll(*store, "keep", kept.size()), kept);
}

TEST(VolatileStore, AReserveNeedsMemoryNotAScratchDirectory) {
  TempDir scratch;
  VolatileStore::Options options;
  options.scratch_dir = scratch.path();
  options.capacity = 1 << 30;
  options.reserve = 1 << 20;
  auto store = VolatileStore::Open(std::move(options));
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("reserve"), std::string::npos);
}

}  // namespace
}  // namespace writ::store::testing
