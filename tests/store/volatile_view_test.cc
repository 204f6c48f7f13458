// Retained volatile bytes read in place (VolatileStore::View): the very memory the bytes
// landed in, no copy; kept unchanged while a view lives, through a removal and the
// store's end; refused by name where the bytes are not in one piece of memory.
#include <cstring>

#include "store/volatile_store.h"
#include "store_test_util.h"

namespace writ::store::testing {
namespace {

constexpr uint64_t kViewExtent = 64 << 10;

std::unique_ptr<VolatileStore> ViewedStore(uint64_t extent_bytes = 64ull << 20) {
  VolatileStore::Options options;
  options.capacity = 1ull << 30;
  options.extent_bytes = extent_bytes;
  auto store = VolatileStore::Open(std::move(options));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

// Places `bytes` as the transport would (straight into the store's memory) and retains them;
// returns where they landed.
const uint8_t* PlaceAndRetain(VolatileStore& store, const std::string& id,
                              const std::vector<uint8_t>& bytes) {
  auto writer = store.Begin(MetaFor(id, bytes), RetentionClass::kVolatile);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  auto placed = (*writer)->Placement(0, bytes.size());
  EXPECT_TRUE(placed.ok() && *placed != nullptr);
  std::memcpy(*placed, bytes.data(), bytes.size());
  EXPECT_TRUE((*writer)->Write(0, std::span<const uint8_t>(*placed, bytes.size())).ok());
  EXPECT_TRUE((*writer)->Commit({"{}"}).ok());
  return *placed;
}

TEST(VolatileView, IsTheMemoryTheTransportPlacedTheBytesIn) {
  auto store = ViewedStore();
  const auto bytes = Bytes(21, (2 << 20) + 77);
  const uint8_t* landed = PlaceAndRetain(*store, "v", bytes);
  auto view = store->View("v", 0, bytes.size());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->bytes.data(), landed) << "a view is not a copy";
  ASSERT_EQ(view->bytes.size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(view->bytes.data(), bytes.data(), bytes.size()));
  auto part = store->View("v", 1000, 5000);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->bytes.data(), landed + 1000);
  EXPECT_EQ(part->bytes.size(), 5000u);
  auto none = store->View("v", bytes.size(), 0);
  ASSERT_TRUE(none.ok()) << "an empty range at the end is a view of nothing";
  EXPECT_TRUE(none->bytes.empty());
}

TEST(VolatileView, KeepsTheBytesThroughARemovalAndTheStoresEnd) {
  auto store = ViewedStore();
  const auto bytes = Bytes(22, (1 << 20) + 5);
  PlaceAndRetain(*store, "kept", bytes);
  auto view = store->View("kept", 0, bytes.size());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_TRUE(store->Remove("kept", false, 0).ok());
  EXPECT_EQ(store->View("kept", 0, 1).status().code(), ErrorCode::kNotFound);
  // The next delivery of the same size does not get the memory a view still shows.
  const auto next = Bytes(23, bytes.size());
  const uint8_t* landed = PlaceAndRetain(*store, "next", next);
  EXPECT_NE(landed, view->bytes.data());
  EXPECT_EQ(0, std::memcmp(view->bytes.data(), bytes.data(), bytes.size()));
  store.reset();  // the receiver stops: the arena stays mapped for the view
  EXPECT_EQ(0, std::memcmp(view->bytes.data(), bytes.data(), bytes.size()));
  view->keep.reset();  // the last holder lets go: the memory goes with the arena
}

TEST(VolatileView, MemoryLetGoByItsLastViewIsClearedBeforeReuse) {
  auto store = ViewedStore();
  const auto bytes = Bytes(24, (1 << 20) + 5);
  PlaceAndRetain(*store, "gone", bytes);
  {
    auto view = store->View("gone", 0, bytes.size());
    ASSERT_TRUE(view.ok());
    ASSERT_TRUE(store->Remove("gone", false, 0).ok());
  }
  auto writer = store->Begin(MetaFor("after", bytes), RetentionClass::kVolatile);
  ASSERT_TRUE(writer.ok());
  auto placed = (*writer)->Placement(0, bytes.size());
  ASSERT_TRUE(placed.ok() && *placed != nullptr);
  const std::vector<uint8_t> zeros(bytes.size(), 0);
  EXPECT_EQ(0, std::memcmp(*placed, zeros.data(), zeros.size()))
      << "memory a view let go shows the removed delivery's bytes";
}

TEST(VolatileView, RefusesByNameWhatIsNotInOnePieceOfMemory) {
  auto store = ViewedStore(kViewExtent);
  EXPECT_EQ(store->View("nobody", 0, 0).status().code(), ErrorCode::kNotFound);
  // Two deliveries copied an extent at a time, in turns: their extents interleave.
  const auto a = Bytes(25, 3 * kViewExtent), b = Bytes(26, 3 * kViewExtent);
  auto wa = store->Begin(MetaFor("a", a, kViewExtent), RetentionClass::kVolatile);
  auto wb = store->Begin(MetaFor("b", b, kViewExtent), RetentionClass::kVolatile);
  ASSERT_TRUE(wa.ok() && wb.ok());
  for (uint64_t off = 0; off < a.size(); off += kViewExtent) {
    ASSERT_TRUE((*wa)->Write(off, std::span(a).subspan(off, kViewExtent)).ok());
    ASSERT_TRUE((*wb)->Write(off, std::span(b).subspan(off, kViewExtent)).ok());
  }
  ASSERT_TRUE((*wa)->Commit({"{}"}).ok());
  wa->reset();
  auto whole = store->View("a", 0, a.size());
  ASSERT_EQ(whole.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(whole.status().message().find("not side by side"), std::string::npos)
      << whole.status().ToString();
  auto second = store->View("a", kViewExtent, kViewExtent);
  ASSERT_TRUE(second.ok()) << "one extent is one piece: " << second.status().ToString();
  EXPECT_EQ(0, std::memcmp(second->bytes.data(), a.data() + kViewExtent, kViewExtent));
  EXPECT_EQ(store->View("a", 1, a.size()).status().code(), ErrorCode::kInvalidArgument);

  TempDir scratch;
  auto in_files = VolatileStore::Open(scratch.path(), 1 << 20);
  ASSERT_TRUE(in_files.ok());
  const auto small = Bytes(27, 100);
  ASSERT_TRUE(
      StoreDelivery(**in_files, MetaFor("f", small), small, RetentionClass::kVolatile).status.ok());
  auto filed = (*in_files)->View("f", 0, small.size());
  ASSERT_EQ(filed.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(filed.status().message().find("unlinked file"), std::string::npos)
      << filed.status().ToString();
}

}  // namespace
}  // namespace writ::store::testing
