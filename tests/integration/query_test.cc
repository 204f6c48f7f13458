// writ::QueryDelivery against a receiver in this process: what it holds, what it does
// not, and a query that cannot be asked.
#include "writ/query.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "requirement.h"
#include "writ/receipt.h"
#include "writ/receiver.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ {
namespace {

class QueryDeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(testing::ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    ReceiverOptions options;
    options.provider = "tcp";
    options.identity_dir = dir_.File("receiver");
    auto receiver = Receiver::Start(options);
    ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
    receiver_ = std::move(receiver).value();
  }
  void TearDown() override {
    if (receiver_) {
      EXPECT_TRUE(receiver_->Stop().ok());
    }
  }

  QueryOptions Options() const {
    QueryOptions o;
    o.to = receiver_->listen_address();
    o.identity_dir = dir_.File("asker");
    return o;
  }

  testing::TempDir dir_;
  std::unique_ptr<Receiver> receiver_;
};

TEST_F(QueryDeliveryTest, ARetainedDeliveryIsAnsweredWithItsDigestAndReceipts) {
  const std::string path = dir_.File("payload");
  std::ofstream(path) << std::string(100000, 'q');
  SendOptions send;
  send.to = receiver_->listen_address();
  send.id = "held-1";
  send.chunk_size = 16384;
  send.retention = RetentionClass::kVolatile;
  send.identity_dir = dir_.File("asker");
  const DeliveryOutcome outcome = Send(path, send);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.ToString();

  auto held = QueryDelivery("held-1", Options());
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_TRUE(held->retained);
  EXPECT_EQ(held->id, "held-1");
  EXPECT_EQ(held->retention, RetentionName(RetentionClass::kVolatile));
  EXPECT_EQ(held->rule, RuleName(Rule::kXxh3_128));
  EXPECT_EQ(held->bytes, 100000u);
  EXPECT_EQ(held->digest, outcome.delivery.digest);
  ASSERT_FALSE(held->receipts.empty());
  for (const std::string& text : held->receipts) {
    auto receipt = ReceiptFromJson(text);
    ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
    EXPECT_EQ(receipt->delivery.id, "held-1");
    EXPECT_TRUE(VerifyReceipt(*receipt, receiver_->public_key_hex()).ok());
  }
  auto last = ReceiptFromJson(held->receipts.back());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->rung, ReceiptRung::kRetained);
}

TEST_F(QueryDeliveryTest, AnIdTheReceiverDoesNotHoldIsNotRetained) {
  auto held = QueryDelivery("never-sent", Options());
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_FALSE(held->retained);
  EXPECT_TRUE(held->retention.empty());
  EXPECT_TRUE(held->receipts.empty());
}

TEST_F(QueryDeliveryTest, ADeliveryRemovedThroughTheApiIsNotRetained) {
  const std::string path = dir_.File("payload");
  std::ofstream(path) << std::string(70000, 'r');
  SendOptions send;
  send.to = receiver_->listen_address();
  send.id = "gone-1";
  send.retention = RetentionClass::kVolatile;
  send.identity_dir = dir_.File("asker");
  ASSERT_TRUE(Send(path, send).status.ok());
  ASSERT_TRUE(QueryDelivery("gone-1", Options())->retained);

  auto removed = receiver_->Remove("gone-1", /*force=*/false);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->bytes, 70000u);
  EXPECT_EQ(removed->retention, RetentionClass::kVolatile);
  EXPECT_TRUE(removed->held_until.empty()) << "no time-to-live was promised";
  auto held = QueryDelivery("gone-1", Options());
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_FALSE(held->retained);
  auto again = receiver_->Remove("gone-1", false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(again.status().message().find("gone-1"), std::string::npos);
}

TEST_F(QueryDeliveryTest, ABadAddressIsAnInvalidArgument) {
  QueryOptions o = Options();
  o.to = "no-port-here";
  auto held = QueryDelivery("x", o);
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace writ
