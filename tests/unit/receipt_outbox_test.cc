// ReceiptOutbox (src/receiver/receipt_outbox.h): receipts issued together leave in one
// `receipts` message, in issue order; a lone one keeps the `receipt` message; rungs issued
// before a signing are signed as one group.
#include "receiver/receipt_outbox.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sample_receipt.h"

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

TEST(ReceiptOutbox, RungsIssuedBeforeASigningAreOneSignatureAndTheLastIsNotQueued) {
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  ReceiptSigner signer(*identity);
  ReceiptOutbox box;
  box.Issue(SampleReceipt(ReceiptRung::kReceived, "d"));
  box.Issue(SampleReceipt(ReceiptRung::kValidated, "d"));
  EXPECT_FALSE(box.empty());
  const Receipt last = SampleReceipt(ReceiptRung::kValidated, "e");  // e.g. `retained`
  receipt::UnsignedReceipt last_text = receipt::Unsigned(last);
  auto signed_now = box.SignIssued(signer, std::span(&last_text, 1));
  ASSERT_TRUE(signed_now.ok()) << signed_now.status().ToString();
  EXPECT_EQ(signer.signatures(), 1u);
  EXPECT_EQ(signer.receipts_signed(), 3u);
  ASSERT_EQ(signed_now->issued.size(), 2u);
  ASSERT_EQ(signed_now->with.size(), 1u);
  std::vector<std::string> texts{signed_now->issued[0].json, signed_now->issued[1].json,
                                 signed_now->with[0]};
  for (size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE(i);
    auto parsed = ReceiptFromJson(texts[i]);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_TRUE(VerifyReceipt(*parsed).ok());
    EXPECT_EQ(nlohmann::json::parse(texts[i])["signature"]["leaf_index"], i);
  }
  // The issued ones are queued, in order; `with` is the caller's to send once recorded.
  auto out = box.Take();
  ASSERT_EQ(out.size(), 1u);
  const auto& batch = std::get<protocol::Receipts>(out[0]).receipts;
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].json, texts[0]);
  EXPECT_EQ(batch[1].json, texts[1]);
  EXPECT_TRUE(box.empty());
  // Nothing issued: nothing signed.
  auto nothing = box.SignIssued(signer);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->issued.empty());
  EXPECT_EQ(signer.signatures(), 1u);
}

}  // namespace
}  // namespace writ::receiver
