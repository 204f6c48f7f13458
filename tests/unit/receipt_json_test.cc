#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "writ/receipt.h"

namespace writ {
namespace {

Receipt Retained() {
  Receipt r;
  r.rung = ReceiptRung::kRetained;
  r.delivery = {"RC-233", 25165824, "xxh3-128", "00112233445566778899aabbccddeeff", 3, 8388608};
  r.observer = "receiver store";
  r.issuer = "writ-serve@127.0.0.1:7233";
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {"rdma_write_with_imm", "tcp", "tcp", "lo", "dram", "writ 0.1.0", "delivery", {"n"}};
  r.statement = "retained";
  r.does_not_establish = "nothing beyond process-running";
  r.retention = RetentionPromise{"volatile", "pwrite", "process-running", "none", "pwrite ok"};
  return r;
}

TEST(ReceiptJson, RoundTripsEveryField) {
  const Receipt r = Retained();
  auto back = ReceiptFromJson(ReceiptToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
}

TEST(ReceiptJson, IsCanonical) {
  const std::string a = ReceiptToJson(Retained());
  auto parsed = nlohmann::json::parse(a);
  EXPECT_EQ(parsed.dump(), a) << "sorted keys, no whitespace";
}

TEST(ReceiptJson, RefusesRungSpecificFieldsOnTheWrongRung) {
  auto j = nlohmann::json::parse(ReceiptToJson(Retained()));
  j["rung"] = "validated";
  j["rule"] = "xxh3-128 of the complete delivery";
  auto parsed = ReceiptFromJson(j.dump());
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("not allowed on a validated receipt"), std::string::npos)
      << parsed.status().message();
}

TEST(ReceiptJson, NamesTheMissingOrMistypedField) {
  auto j = nlohmann::json::parse(ReceiptToJson(Retained()));
  j["delivery"]["bytes"] = "many";
  EXPECT_EQ(ReceiptFromJson(j.dump()).status().message(),
            "delivery.bytes: expected unsigned integer");
  j = nlohmann::json::parse(ReceiptToJson(Retained()));
  j.erase("survives");
  EXPECT_EQ(ReceiptFromJson(j.dump()).status().message(), "survives: missing");
  EXPECT_EQ(ReceiptFromJson("[1]").status().code(), ErrorCode::kMalformed);
  EXPECT_EQ(ReceiptFromJson("{").status().code(), ErrorCode::kMalformed);
}

TEST(ReceiptJson, RetainedReceiptNeedsAllFiveRetentionFields) {
  for (const char* field :
       {"acknowledged_point", "survives", "promise_after_failure", "evidence"}) {
    auto j = nlohmann::json::parse(ReceiptToJson(Retained()));
    j[field] = "";
    EXPECT_FALSE(ReceiptFromJson(j.dump()).ok()) << field;
  }
}

}  // namespace
}  // namespace writ
