#include <gtest/gtest.h>

#include "sender/delivery_run.h"

namespace writ::sender {
namespace {

TEST(ChunkFit, AChunkLargerThanTheProvidersLargestWriteIsRefusedByName) {
  EXPECT_TRUE(CheckChunkFits(8ull << 20, 1ull << 31, "verbs;ofi_rxm").ok());
  EXPECT_TRUE(CheckChunkFits(1ull << 31, 1ull << 31, "verbs;ofi_rxm").ok());
  const Status too_big = CheckChunkFits((1ull << 31) + 1, 1ull << 31, "verbs;ofi_rxm");
  EXPECT_EQ(too_big.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("2147483649"), std::string::npos) << too_big.message();
  EXPECT_NE(too_big.message().find("max_msg_size 2147483648"), std::string::npos);
  EXPECT_NE(too_big.message().find("verbs;ofi_rxm"), std::string::npos);
}

}  // namespace
}  // namespace writ::sender
