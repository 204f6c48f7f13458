#include "writ/status.h"

#include <gtest/gtest.h>

namespace writ {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  WRIT_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

TEST(Status, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, ErrorNamesCodeAndMessage) {
  Status s = Status::Refused("oversize announce");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kRefused);
  EXPECT_EQ(s.ToString(), "refused: oversize announce");
  EXPECT_EQ(s.Annotate("delivery RC-233").message(), "delivery RC-233: oversize announce");
}

TEST(Status, FabricErrorKeepsProviderNumber) {
  Status s = Status::Fabric(ErrorCode::kTransport, "fi_write: canceled", 125);
  ASSERT_TRUE(s.fi_errno().has_value());
  EXPECT_EQ(*s.fi_errno(), 125);
}

TEST(Result, PropagatesErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
}

}  // namespace
}  // namespace writ
