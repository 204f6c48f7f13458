// The tree rules against a reference computed here from the definition (docs/protocol.md),
// at the leaf-size edges, with any split of Update; and the leaf and root functions.
#include <gtest/gtest.h>

#include <random>

#include "common/hex.h"
#include "random_bytes.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::vocabulary {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr Rule kTreeRules[] = {Rule::kXxh3_128Tree1MiB, Rule::kSha256Tree1MiB};

// root = H(le64(total) || H(leaf 0) || ...), spelled out with the base hash alone.
std::vector<uint8_t> Reference(Rule tree, std::span<const uint8_t> data) {
  const Rule base = tree == Rule::kSha256Tree1MiB ? Rule::kSha256 : Rule::kXxh3_128;
  std::vector<uint8_t> input;
  for (int i = 0; i < 8; ++i) input.push_back(static_cast<uint8_t>(data.size() >> (8 * i)));
  for (uint64_t at = 0; at < data.size(); at += kMiB) {
    auto leaf = DigestOf(base, data.subspan(at, std::min<uint64_t>(kMiB, data.size() - at)));
    EXPECT_TRUE(leaf.ok());
    input.insert(input.end(), leaf->begin(), leaf->end());
  }
  return DigestOf(base, input).value();
}

const std::vector<uint8_t>& Data() {
  static const std::vector<uint8_t> data = writ::testing::RandomBytes(14, 5 * kMiB + 4099);
  return data;
}

const uint64_t kSizes[] = {0, 1, kMiB - 1, kMiB, kMiB + 1, 5 * kMiB + 4099};

TEST(TreeDigest, EqualsTheReferenceAtLeafEdges) {
  for (Rule rule : kTreeRules) {
    for (uint64_t size : kSizes) {
      SCOPED_TRACE(std::string(RuleName(rule)) + " " + std::to_string(size));
      const auto bytes = std::span(Data()).first(size);
      auto digest = DigestOf(rule, bytes);
      ASSERT_TRUE(digest.ok()) << digest.status().ToString();
      EXPECT_EQ(digest->size(), DigestSize(rule));
      EXPECT_EQ(*digest, Reference(rule, bytes));
    }
  }
}

TEST(TreeDigest, AnySplitOfUpdateGivesTheSameRoot) {
  std::mt19937_64 rng(1414);
  for (Rule rule : kTreeRules) {
    auto digester = Digester::Create(rule);
    ASSERT_TRUE(digester.ok());
    EXPECT_EQ((*digester)->rule(), rule);
    for (uint64_t size : kSizes) {
      const auto bytes = std::span(Data()).first(size);
      const std::vector<uint8_t> expected = Reference(rule, bytes);
      for (int trial = 0; trial < 6; ++trial) {
        (*digester)->Reset();
        // Pieces that straddle leaves, land on their edges, and are sometimes empty.
        const uint64_t limit = trial % 3 == 0 ? 70 : (trial % 3 == 1 ? kMiB / 3 : 3 * kMiB);
        for (uint64_t at = 0; at < size;) {
          const uint64_t n = std::min<uint64_t>(size - at, rng() % (limit + 1));
          (*digester)->Update(bytes.subspan(at, n));
          at += n;
        }
        EXPECT_EQ((*digester)->Finish(), expected)
            << RuleName(rule) << " " << size << " trial " << trial;
      }
    }
  }
}

TEST(TreeDigest, LeavesDigestedApartGiveTheRoot) {
  for (Rule rule : kTreeRules) {
    const auto bytes = std::span(Data());
    std::vector<std::vector<uint8_t>> leaves(TreeLeafCount(bytes.size()));
    // Out of order, as workers finish.
    for (size_t i = leaves.size(); i-- > 0;) {
      auto leaf =
          TreeLeafDigest(rule, bytes.subspan(i * kMiB, std::min(kMiB, bytes.size() - i * kMiB)));
      ASSERT_TRUE(leaf.ok());
      leaves[i] = *leaf;
    }
    auto root = TreeRoot(rule, bytes.size(), leaves);
    ASSERT_TRUE(root.ok());
    EXPECT_EQ(*root, Reference(rule, bytes));
    leaves.pop_back();
    EXPECT_FALSE(TreeRoot(rule, bytes.size(), leaves).ok());  // a leaf missing
  }
  EXPECT_EQ(TreeLeafCount(0), 0u);
  EXPECT_EQ(TreeLeafCount(kMiB), 1u);
  EXPECT_EQ(TreeLeafCount(kMiB + 1), 2u);
  EXPECT_FALSE(TreeBase(Rule::kSha256).has_value());
  EXPECT_EQ(TreeBase(Rule::kSha256Tree1MiB), Rule::kSha256);
  EXPECT_FALSE(TreeLeafDigest(Rule::kXxh3_128, {}).ok());
}

// Pinned, so another implementation can check itself (docs/protocol.md, "Tree rules").
TEST(TreeDigest, KnownSha256TreeVectors) {
  EXPECT_EQ(ToHex(*DigestOf(Rule::kSha256Tree1MiB, {})),
            "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
  const std::string abc = "abc";
  EXPECT_EQ(ToHex(*DigestOf(Rule::kSha256Tree1MiB,
                            std::span(reinterpret_cast<const uint8_t*>(abc.data()), 3))),
            "80a67215aff0c585b6c055e38aa04b76d4b208e2d0c3eb31bfd02822ae62e1c0");
  std::vector<uint8_t> pattern(kMiB + 1);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i % 251);
  EXPECT_EQ(ToHex(*DigestOf(Rule::kSha256Tree1MiB, pattern)),
            "9b68d7232d928092ae23ae53fbf9b3d09483799763b12df0621ce0355fc648df");
}

}  // namespace
}  // namespace writ::vocabulary
