// A scatter-gather source: the concatenation of caller regions, read (gathered) at any
// offset and digested in one pass, equal to the digest of the concatenated bytes.
#include "sender/region_source.h"

#include <gtest/gtest.h>

#include <vector>

#include "random_bytes.h"
#include "sender/delivery_source.h"
#include "vocabulary/digest.h"

namespace writ::sender {
namespace {

// Every other 4 KiB page of a buffer, plus zero-length regions among them.
struct Pages {
  std::vector<uint8_t> buffer = writ::testing::RandomBytes(7, 64 * 4096);
  std::vector<Region> regions;
  std::vector<uint8_t> concat;
  Pages() {
    for (size_t page = 0; page < 64; page += 2) {
      regions.push_back(Region{buffer.data() + page * 4096, 4096});
      if (page % 8 == 0) regions.push_back(Region{nullptr, 0});
      concat.insert(concat.end(), buffer.begin() + page * 4096, buffer.begin() + (page + 1) * 4096);
    }
  }
};

TEST(RegionList, ReadGathersAcrossRegionsAtAnyOffset) {
  Pages p;
  auto list = RegionList::Of(p.regions);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), p.concat.size());
  for (uint64_t offset : {0ull, 1ull, 4095ull, 4096ull, 10000ull, 131071ull - 5000}) {
    std::vector<uint8_t> out(5000);
    ASSERT_TRUE(list->Read(offset, out).ok()) << offset;
    EXPECT_TRUE(std::equal(out.begin(), out.end(), p.concat.begin() + offset)) << offset;
  }
  std::vector<uint8_t> past(2);
  EXPECT_FALSE(list->Read(p.concat.size() - 1, past).ok());
}

TEST(RegionList, TheDigestIsTheConcatenationsInOnePass) {
  Pages p;
  auto list = RegionList::Of(p.regions);
  ASSERT_TRUE(list.ok());
  for (Rule rule : {Rule::kXxh3_128, Rule::kSha256, Rule::kXxh3_128Tree1MiB}) {
    auto expected = vocabulary::DigestOf(rule, p.concat);
    ASSERT_TRUE(expected.ok());
    auto digester = vocabulary::Digester::Create(rule);
    ASSERT_TRUE(digester.ok());
    // In pieces that cut regions, as chunks do.
    for (uint64_t at = 0; at < list->size(); at += 3000) {
      ASSERT_TRUE(list->Fold(**digester, at, std::min<uint64_t>(3000, list->size() - at)).ok());
    }
    EXPECT_EQ((*digester)->Finish(), *expected) << RuleName(rule);
    auto source = DeliverySource::FromRegions(*list, "sg");
    auto whole = source.Digest(rule);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(*whole, *expected) << RuleName(rule);
  }
}

TEST(RegionList, TheTableKeepsZeroLengthRegionsAndRefusesBadOnes) {
  Pages p;
  auto list = RegionList::Of(p.regions);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->lengths().size(), p.regions.size());
  EXPECT_EQ(list->lengths()[1], 0u);
  auto source = DeliverySource::FromRegions(*list, "sg");
  EXPECT_TRUE(source.scatter_gather());
  EXPECT_FALSE(source.mappable());
  EXPECT_EQ(source.region_lengths(), list->lengths());

  const Region null_with_length[] = {{nullptr, 1}};
  EXPECT_EQ(RegionList::Of(null_with_length).status().code(), ErrorCode::kInvalidArgument);
  const uint8_t byte = 0;
  const Region wrapping[] = {{&byte, UINT64_MAX}, {&byte, 1}};
  EXPECT_EQ(RegionList::Of(wrapping).status().code(), ErrorCode::kInvalidArgument);
  std::vector<Region> too_many(65537, Region{&byte, 1});
  EXPECT_EQ(RegionList::Of(too_many).status().code(), ErrorCode::kInvalidArgument);
  too_many.pop_back();
  EXPECT_TRUE(RegionList::Of(too_many).ok());
}

}  // namespace
}  // namespace writ::sender
