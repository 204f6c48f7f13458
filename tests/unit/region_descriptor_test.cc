#include <gtest/gtest.h>

#include "fabric/memory_region.h"

namespace writ::fabric {
namespace {

TEST(RegionDescriptor, RoundTrips) {
  RegionDescriptor d{0x7f00deadbeef, 0x1234567890abcdef, 25165824};
  auto back = RegionDescriptor::Decode(d.Encode());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d);
}

TEST(RegionDescriptor, RejectsMalformedText) {
  for (const char* bad : {"", "1:2", "x:1:2", "1:2:3:4", "1::2", ":1:2"}) {
    EXPECT_EQ(RegionDescriptor::Decode(bad).status().code(), ErrorCode::kMalformed) << bad;
  }
}

}  // namespace
}  // namespace writ::fabric
