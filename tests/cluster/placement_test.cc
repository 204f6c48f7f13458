// Placement: the same order from the same id and member set, in any listing order; at most
// one member per failure domain before any repeated domain.
#include "cluster/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace writ::cluster {
namespace {

Member Named(int i, const std::string& domain) {
  Member m;
  m.address = "127.0.0." + std::to_string(i) + ":7233";
  m.public_key = std::string(63, '0') + std::to_string(i % 10);
  m.public_key[0] = static_cast<char>('a' + i % 6);
  m.domain = domain;
  return m;
}

TEST(Placement, DeterministicWhateverTheListingOrder) {
  std::vector<Member> members{Named(1, "a"), Named(2, "b"), Named(3, "c"), Named(4, "d")};
  auto first = PlacementOrder("delivery-7", members);
  std::reverse(members.begin(), members.end());
  auto second = PlacementOrder("delivery-7", members);
  ASSERT_EQ(first.size(), 4u);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].address, second[i].address);
}

TEST(Placement, DifferentIdsSpreadOverMembers) {
  std::vector<Member> members{Named(1, "a"), Named(2, "b"), Named(3, "c"), Named(4, "d")};
  std::set<std::string> firsts;
  for (int i = 0; i < 64; ++i)
    firsts.insert(PlacementOrder("d" + std::to_string(i), members).front().address);
  EXPECT_GE(firsts.size(), 3u);
}

TEST(Placement, RepeatedDomainsComeAfterEveryDistinctOne) {
  std::vector<Member> members{Named(1, "a"), Named(2, "a"), Named(3, "b"), Named(4, "a")};
  auto order = PlacementOrder("x", members);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_NE(order[0].domain, order[1].domain);
  EXPECT_EQ(order[2].domain, "a");
  EXPECT_EQ(order[3].domain, "a");
}

}  // namespace
}  // namespace writ::cluster
