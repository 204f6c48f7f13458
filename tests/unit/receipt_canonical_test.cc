// Only a receipt whose fields are exactly the signed ones is read: an unsigned extra
// field or a duplicated key (nlohmann::json would keep the last copy, so a forged first
// copy could be shown while the signature checks the second) is refused, naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "receipt/signing.h"
#include "writ/receipt.h"

namespace writ {
namespace {

Receipt Validated() {
  Receipt r;
  r.rung = ReceiptRung::kValidated;
  r.delivery = {"RC-233", 25165824, "xxh3-128", "00112233445566778899aabbccddeeff", 3, 8388608};
  r.observer = "receiver application";
  r.issuer = "writ-serve@127.0.0.1:7233";
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {"rdma_write_with_imm", "tcp", "tcp", "lo", "dram", "writ 0.1.0", "delivery", {}};
  r.statement = "validated";
  r.does_not_establish = "retention";
  r.rule_passed = "xxh3-128 of the complete delivery";
  return r;
}

std::string SignedText() {
  auto identity = receipt::Identity::Generate();
  EXPECT_TRUE(identity.ok());
  Receipt r = Validated();
  auto text = receipt::SignReceiptToJson(r, *identity);
  EXPECT_TRUE(text.ok());
  return *text;
}

// Parses and verifies; the message of the first failure, or "" when valid.
std::string CanonicalProblem(const std::string& text) {
  auto parsed = ReceiptFromJson(text);
  if (!parsed.ok()) return parsed.status().message();
  Status verified = VerifyReceipt(*parsed);
  return verified.ok() ? "" : verified.message();
}

std::string WithExtra(const std::string& path, const char* key) {
  auto j = nlohmann::json::parse(SignedText());
  nlohmann::json& target = path.empty() ? j : j[path];
  target[key] = "unsigned";
  return j.dump();
}

TEST(ReceiptCanonical, TheSignedTextVerifies) { EXPECT_EQ(CanonicalProblem(SignedText()), ""); }

TEST(ReceiptCanonical, PrettyPrintedWithTheSameFieldsVerifies) {
  // Decision (docs/security.md, "Receipts"): whitespace and key order are not part of
  // what is signed; the fields and their values are.
  auto j = nlohmann::json::parse(SignedText());
  EXPECT_EQ(CanonicalProblem(j.dump(4)), "");
}

TEST(ReceiptCanonical, AnExtraTopLevelFieldIsRefusedByName) {
  EXPECT_EQ(CanonicalProblem(WithExtra("", "approved_by")),
            "approved_by: unknown field (not part of the signed receipt)");
}

TEST(ReceiptCanonical, AnExtraFieldInsideANestedObjectIsRefusedByName) {
  EXPECT_EQ(CanonicalProblem(WithExtra("delivery", "note")),
            "delivery.note: unknown field (not part of the signed receipt)");
  EXPECT_EQ(CanonicalProblem(WithExtra("context", "region")),
            "context.region: unknown field (not part of the signed receipt)");
  EXPECT_EQ(CanonicalProblem(WithExtra("signature", "trusted")),
            "signature.trusted: unknown field (not part of the signed receipt)");
}

TEST(ReceiptCanonical, ARungSpecificFieldOfAnotherRungIsStillRefused) {
  EXPECT_EQ(CanonicalProblem(WithExtra("", "survives")),
            "survives: not allowed on a validated receipt");
}

TEST(ReceiptCanonical, ADuplicatedKeyWhoseFirstCopyIsForgedIsRefused) {
  const std::string text = SignedText();
  ASSERT_EQ(text.front(), '{');
  const std::string forged = "{\"issuer\":\"bank-of-writ\"," + text.substr(1);
  EXPECT_EQ(CanonicalProblem(forged), "issuer: duplicate key");
}

TEST(ReceiptCanonical, ADuplicatedNestedKeyIsRefused) {
  std::string text = SignedText();
  const std::string at = "\"delivery\":{";
  const size_t pos = text.find(at);
  ASSERT_NE(pos, std::string::npos);
  text.insert(pos + at.size(), "\"bytes\":1,");
  EXPECT_EQ(CanonicalProblem(text), "delivery.bytes: duplicate key");
}

TEST(ReceiptCanonical, AnEmptyFieldRemovedIsRefused) {
  // context.notes is [] here: read as "no notes", the receipt would re-serialise to the
  // signed bytes and verify although a signed field is gone.
  auto j = nlohmann::json::parse(SignedText());
  j["context"].erase("notes");
  EXPECT_EQ(CanonicalProblem(j.dump()), "context.notes: missing");
}

TEST(ReceiptCanonical, AnUnknownFieldNameIsShownEscaped) {
  auto j = nlohmann::json::parse(SignedText());
  j["\x1b[2Jx"] = 1;
  EXPECT_EQ(CanonicalProblem(j.dump()),
            "\\x1b[2Jx: unknown field (not part of the signed receipt)");
}

}  // namespace
}  // namespace writ
