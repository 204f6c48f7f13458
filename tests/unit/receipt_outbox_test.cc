// ReceiptOutbox (src/receiver/receipt_outbox.h): receipts issued together leave in one
// `receipts` message, in issue order; a lone one keeps the `receipt` message.
#include "receiver/receipt_outbox.h"

#include <gtest/gtest.h>

namespace writ::receiver {
namespace {

std::string Json(size_t i) { return "{\"n\":" + std::to_string(i) + "}"; }

TEST(ReceiptOutbox, ALoneReceiptIsAReceiptMessage) {
  ReceiptOutbox box;
  box.Add("d", Json(0));
  auto out = box.Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<protocol::Receipt>(out[0]));
  EXPECT_EQ(std::get<protocol::Receipt>(out[0]), (protocol::Receipt{"d", Json(0)}));
  EXPECT_TRUE(box.empty());
  EXPECT_TRUE(box.Take().empty());
}

TEST(ReceiptOutbox, ReceiptsIssuedTogetherAreOneMessageInIssueOrder) {
  ReceiptOutbox box;
  box.Add("d", Json(0));
  box.Add("d", Json(1));
  box.Add("e", Json(2));
  auto out = box.Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<protocol::Receipts>(out[0]));
  const auto& batch = std::get<protocol::Receipts>(out[0]).receipts;
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0], (protocol::Receipt{"d", Json(0)}));
  EXPECT_EQ(batch[1], (protocol::Receipt{"d", Json(1)}));
  EXPECT_EQ(batch[2], (protocol::Receipt{"e", Json(2)}));
  EXPECT_EQ(protocol::ReceiptsOf(out[0]).size(), 3u);
}

TEST(ReceiptOutbox, MoreThanOneMessageHoldsAreSplitAndALoneRestIsAReceipt) {
  ReceiptOutbox box;
  const size_t n = 2 * protocol::kMaxReceiptsPerMessage + 1;
  for (size_t i = 0; i < n; ++i) box.Add("d", Json(i));
  auto out = box.Take();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<protocol::Receipts>(out[0]).receipts.size(), protocol::kMaxReceiptsPerMessage);
  EXPECT_EQ(std::get<protocol::Receipts>(out[1]).receipts.size(), protocol::kMaxReceiptsPerMessage);
  EXPECT_EQ(std::get<protocol::Receipt>(out[2]), (protocol::Receipt{"d", Json(n - 1)}));
  size_t next = 0;
  for (const auto& message : out) {
    for (const protocol::Receipt* r : protocol::ReceiptsOf(message))
      EXPECT_EQ(r->json, Json(next++));
  }
  EXPECT_EQ(next, n);
}

}  // namespace
}  // namespace writ::receiver
