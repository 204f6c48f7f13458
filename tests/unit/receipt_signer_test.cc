// ReceiptSigner (src/receiver/receipt_signer.h): receipts submitted while a signature is
// under way are signed together, so a busy receiver makes fewer signatures than receipts,
// and a lone receipt is signed at once in the plain form.
#include "receiver/receipt_signer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "sample_receipt.h"

namespace writ::receiver {
namespace {

Receipt Received(int i) { return SampleReceipt(ReceiptRung::kReceived, "d-" + std::to_string(i)); }

void ExpectVerifies(const std::string& json) {
  auto parsed = ReceiptFromJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Status verified = VerifyReceipt(*parsed);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

class ReceiptSignerTest : public ::testing::Test {
 protected:
  receipt::Identity identity_ = std::move(receipt::Identity::Generate()).value();
};

TEST_F(ReceiptSignerTest, ALoneReceiptIsSignedAtOnceInThePlainForm) {
  ReceiptSigner signer(identity_);
  auto json = signer.SignOne(Received(0));
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(nlohmann::json::parse(*json)["signature"]["algorithm"], "ed25519");
  ExpectVerifies(*json);
  EXPECT_EQ(signer.signatures(), 1u);
  EXPECT_EQ(signer.receipts_signed(), 1u);
}

TEST_F(ReceiptSignerTest, KReceiptsSubmittedTogetherTakeOneSignature) {
  ReceiptSigner signer(identity_);
  std::vector<receipt::UnsignedReceipt> k;
  for (int i = 0; i < 16; ++i) k.push_back(receipt::Unsigned(Received(i)));
  auto json = signer.Sign(k);
  ASSERT_TRUE(json.ok());
  ASSERT_EQ(json->size(), 16u);
  for (const auto& one : *json) ExpectVerifies(one);
  EXPECT_EQ(signer.signatures(), 1u);
  EXPECT_EQ(signer.receipts_signed(), 16u);
}

// K callers on their own threads: the first signs alone; the other K-1 arrive while its
// signature is under way (the hook holds it until they have queued) and are signed as
// one group by whichever of them signs next. 2 signatures for K receipts.
TEST_F(ReceiptSignerTest, ReceiptsReadyDuringASignatureAreSignedTogether) {
  constexpr int kCallers = 8;
  ReceiptSigner* signer_ptr = nullptr;
  std::atomic<bool> signing_first{false};
  ReceiptSigner signer(identity_, [&](size_t) {
    if (signing_first.exchange(true)) return;
    while (signer_ptr->queued() < kCallers - 1) std::this_thread::yield();
  });
  signer_ptr = &signer;
  std::vector<std::string> results(kCallers);
  std::vector<std::thread> callers;
  callers.emplace_back([&] { results[0] = *signer.SignOne(Received(0)); });
  // The others start once the first is signing (it holds the signature in the hook).
  while (!signing_first.load()) std::this_thread::yield();
  for (int i = 1; i < kCallers; ++i) {
    callers.emplace_back([&, i] { results[i] = *signer.SignOne(Received(i)); });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(signer.receipts_signed(), static_cast<uint64_t>(kCallers));
  EXPECT_EQ(signer.signatures(), 2u);
  EXPECT_LT(signer.signatures(), signer.receipts_signed());
  for (const auto& json : results) ExpectVerifies(json);
  EXPECT_EQ(nlohmann::json::parse(results[0])["signature"]["algorithm"], "ed25519");
  EXPECT_EQ(nlohmann::json::parse(results[1])["signature"]["leaves"], kCallers - 1);
}

}  // namespace
}  // namespace writ::receiver
