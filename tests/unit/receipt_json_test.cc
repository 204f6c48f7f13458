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

// What the strict reader refuses, each by name: these are the ways a text could carry
// something other than the fields that were signed.
TEST(ReceiptJson, RefusesNumbersThatAreNotUnsignedIntegers) {
  for (const char* bytes : {"-1", "1.0", "1e3", "-0"}) {
    std::string text = ReceiptToJson(Retained());
    const std::string field = "\"bytes\":25165824";
    text.replace(text.find(field), field.size(), std::string("\"bytes\":") + bytes);
    EXPECT_EQ(ReceiptFromJson(text).status().message(), "delivery.bytes: expected unsigned integer")
        << bytes;
  }
  std::string text = ReceiptToJson(Retained());
  const std::string field = "\"bytes\":25165824";
  text.replace(text.find(field), field.size(), "\"bytes\":18446744073709551615");
  auto largest = ReceiptFromJson(text);
  ASSERT_TRUE(largest.ok()) << largest.status().ToString();
  EXPECT_EQ(largest->delivery.bytes, UINT64_MAX);
}

TEST(ReceiptJson, NamesADuplicatedKeyAtAnyDepth) {
  Receipt grouped = Retained();
  ReceiptSignature& s = grouped.signature.emplace();
  s.algorithm = "ed25519-merkle-sha256";
  s.key_id = "k";
  s.public_key = "p";
  s.value = "v";
  s.root = "r";
  s.leaves = 2;
  s.path = {{"right", "h"}};
  const std::string text = ReceiptToJson(grouped);
  ASSERT_TRUE(ReceiptFromJson(text).ok()) << ReceiptFromJson(text).status().ToString();
  auto with = [&](std::string_view field, std::string_view twice) {
    std::string t = text;
    t.insert(t.find(field) + field.size(), twice);
    return ReceiptFromJson(t).status().message();
  };
  EXPECT_EQ(with("\"side\":\"right\"", ",\"side\":\"left\""),
            "signature.path[0].side: duplicate key");
  EXPECT_EQ(with("\"notes\":[\"n\"]", ",\"notes\":[]"), "context.notes: duplicate key");
  EXPECT_EQ(with("\"issuer\":\"writ-serve@127.0.0.1:7233\"", ",\"issuer\":\"someone\""),
            "issuer: duplicate key");
}

TEST(ReceiptJson, ReadsExactlyOneDocument) {
  const std::string text = ReceiptToJson(Retained());
  EXPECT_EQ(ReceiptFromJson("\xEF\xBB\xBF" + text).status().message(),
            "receipt: starts with a byte order mark");
  EXPECT_EQ(ReceiptFromJson(text + std::string(1, '\0') + "{}").status().message(),
            "receipt: a NUL byte at offset " + std::to_string(text.size()) +
                " (exactly one JSON document is read)");
  EXPECT_EQ(ReceiptFromJson(text + "{}").status().message(), "receipt: not valid JSON");
  EXPECT_EQ(ReceiptFromJson(text + " ").status().code(), ErrorCode::kOk);
  EXPECT_EQ(ReceiptFromJson("\"a string\"").status().message(), "receipt: expected a JSON object");
}

}  // namespace
}  // namespace writ
