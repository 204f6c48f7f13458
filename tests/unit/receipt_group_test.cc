// Group-signed receipts (docs/protocol.md, "Group signatures"): every member of a group
// verifies on its own, and changing anything the signature or the path covers fails
// with an error that names it. A lone receipt keeps the plain ed25519 form.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "receipt/merkle.h"
#include "receipt/signing.h"
#include "sample_receipt.h"
#include "writ/receipt.h"

namespace writ {
namespace {

Receipt Validated(int i) {
  return SampleReceipt(ReceiptRung::kValidated, "RC-" + std::to_string(i));
}

std::vector<std::string> SignGroup(size_t n, const receipt::Identity& identity) {
  std::vector<Receipt> group;
  for (size_t i = 0; i < n; ++i) group.push_back(Validated(static_cast<int>(i)));
  auto signed_json = receipt::SignReceiptGroupToJson(group, identity);
  EXPECT_TRUE(signed_json.ok()) << signed_json.status().ToString();
  return signed_json.ok() ? *signed_json : std::vector<std::string>{};
}

// Parses and verifies; the message of the first failure, or "" when valid.
std::string Problem(const std::string& text, const std::string& key = "") {
  auto parsed = ReceiptFromJson(text);
  if (!parsed.ok()) return parsed.status().message();
  Status verified = VerifyReceipt(*parsed, key);
  return verified.ok() ? "" : verified.message();
}

class ReceiptGroup : public ::testing::Test {
 protected:
  receipt::Identity identity_ = std::move(receipt::Identity::Generate()).value();
};

TEST_F(ReceiptGroup, EveryMemberVerifiesAloneForEverySize) {
  for (size_t n : {2u, 3u, 4u, 5u, 7u, 8u, 9u, 33u}) {
    const auto group = SignGroup(n, identity_);
    ASSERT_EQ(group.size(), n);
    std::string root;
    for (size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("leaf " + std::to_string(i) + " of " + std::to_string(n));
      EXPECT_EQ(Problem(group[i], receipt::PublicKeyHex(identity_.public_key())), "");
      auto j = nlohmann::json::parse(group[i]);
      EXPECT_EQ(j["signature"]["algorithm"], "ed25519-merkle-sha256");
      EXPECT_EQ(j["signature"]["leaf_index"], i);
      EXPECT_EQ(j["signature"]["leaves"], n);
      if (i == 0) root = j["signature"]["root"];
      EXPECT_EQ(j["signature"]["root"], root);  // one root, one signature
      // A re-serialisation of the parsed receipt is the same text.
      EXPECT_EQ(ReceiptToJson(*ReceiptFromJson(group[i])), group[i]);
    }
  }
}

TEST_F(ReceiptGroup, ALoneReceiptKeepsThePlainFormByteForByte) {
  Receipt alone = Validated(0);
  Receipt same = Validated(0);
  std::vector<Receipt> one{alone};
  auto grouped = receipt::SignReceiptGroupToJson(one, identity_);
  auto plain = receipt::SignReceiptToJson(same, identity_);
  ASSERT_TRUE(grouped.ok() && plain.ok());
  // Ed25519 is deterministic: the same key over the same bytes gives the same signature.
  EXPECT_EQ(grouped->front(), *plain);
  auto j = nlohmann::json::parse(*plain);
  EXPECT_EQ(j["signature"].size(), 4u);  // algorithm, key_id, public_key, value
  EXPECT_EQ(j["signature"]["algorithm"], "ed25519");
}

nlohmann::json Member(const std::vector<std::string>& group, size_t i) {
  return nlohmann::json::parse(group[i]);
}

TEST_F(ReceiptGroup, ChangingAMemberFieldFails) {
  auto j = Member(SignGroup(5, identity_), 2);
  j["delivery"]["bytes"] = 4097;
  j["delivery"]["chunk_size"] = 4097;
  EXPECT_EQ(Problem(j.dump()),
            "signature.path: does not lead from this receipt to signature.root (the receipt or "
            "its path changed after signing)");
}

TEST_F(ReceiptGroup, ChangingAPathHashFails) {
  auto j = Member(SignGroup(5, identity_), 1);
  std::string hash = j["signature"]["path"][1]["hash"];
  hash[0] = hash[0] == '0' ? '1' : '0';
  j["signature"]["path"][1]["hash"] = hash;
  EXPECT_EQ(Problem(j.dump()),
            "signature.path: does not lead from this receipt to signature.root (the receipt or "
            "its path changed after signing)");
}

TEST_F(ReceiptGroup, SwappingASideFails) {
  auto j = Member(SignGroup(4, identity_), 0);
  j["signature"]["path"][0]["side"] = "left";
  EXPECT_EQ(Problem(j.dump()), "signature.path[0].side: 'left', but leaf 0 of 4 needs 'right'");
}

TEST_F(ReceiptGroup, ClaimingAnotherLeafIndexFails) {
  auto j = Member(SignGroup(4, identity_), 0);
  j["signature"]["leaf_index"] = 1;  // its path's sides are those of leaf 0
  EXPECT_EQ(Problem(j.dump()), "signature.path[0].side: 'right', but leaf 1 of 4 needs 'left'");
}

// Every other (leaf_index, leaves) pair, including those whose path has the same shape
// (e.g. leaf 8 of 9 and leaf 4 of 5: one step, on the left), fails: the leaf binds both.
TEST_F(ReceiptGroup, EveryOtherLeafIndexAndLeavesPairFails) {
  for (size_t n : {2u, 3u, 5u, 6u, 9u}) {
    const auto group = SignGroup(n, identity_);
    for (size_t i = 0; i < n; ++i) {
      for (uint64_t leaves = 1; leaves <= 2 * n + 1; ++leaves) {
        for (uint64_t index = 0; index < leaves; ++index) {
          if (index == i && leaves == n) continue;
          SCOPED_TRACE("leaf " + std::to_string(i) + " of " + std::to_string(n) + " as " +
                       std::to_string(index) + " of " + std::to_string(leaves));
          auto j = Member(group, i);
          j["signature"]["leaf_index"] = index;
          j["signature"]["leaves"] = leaves;
          EXPECT_NE(Problem(j.dump()), "");
        }
      }
    }
  }
}

TEST_F(ReceiptGroup, TheLastLeafOfNineCannotPassAsTheLastOfFive) {
  // The case: the same path shape, so only the leaf's binding catches it.
  auto j = Member(SignGroup(9, identity_), 8);
  ASSERT_EQ(receipt::ExpectedSides(8, 9), receipt::ExpectedSides(4, 5));
  j["signature"]["leaf_index"] = 4;
  j["signature"]["leaves"] = 5;
  EXPECT_EQ(Problem(j.dump()),
            "signature.path: does not lead from this receipt to signature.root (the receipt or "
            "its path changed after signing)");
}

TEST_F(ReceiptGroup, ChangingTheRootFails) {
  auto j = Member(SignGroup(3, identity_), 2);
  std::string root = j["signature"]["root"];
  root[5] = root[5] == 'a' ? 'b' : 'a';
  j["signature"]["root"] = root;
  EXPECT_EQ(Problem(j.dump()),
            "signature.path: does not lead from this receipt to signature.root (the receipt or "
            "its path changed after signing)");
}

TEST_F(ReceiptGroup, ASignatureOfAnotherGroupFails) {
  // A leaf, path and root that agree, but the value signs another group's root.
  auto j = Member(SignGroup(3, identity_), 0);
  std::vector<Receipt> others{Validated(10), Validated(11), Validated(12)};
  auto other = receipt::SignReceiptGroupToJson(others, identity_);
  ASSERT_TRUE(other.ok());
  j["signature"]["value"] = nlohmann::json::parse(other->front())["signature"]["value"];
  EXPECT_EQ(Problem(j.dump()),
            "signature: does not sign signature.root (root changed after signing, or forged)");
}

TEST_F(ReceiptGroup, ChangingTheSignatureFails) {
  auto j = Member(SignGroup(2, identity_), 1);
  std::string value = j["signature"]["value"];
  value[10] = value[10] == 'f' ? 'e' : 'f';
  j["signature"]["value"] = value;
  EXPECT_EQ(Problem(j.dump()),
            "signature: does not sign signature.root (root changed after signing, or forged)");
}

TEST_F(ReceiptGroup, ASignatureOfAnotherKeyIsNamed) {
  auto other = std::move(receipt::Identity::Generate()).value();
  const auto group = SignGroup(3, identity_);
  EXPECT_NE(Problem(group[0], receipt::PublicKeyHex(other.public_key())), "");
}

TEST_F(ReceiptGroup, GroupFieldsInThePlainFormAreRefused) {
  auto j = Member(SignGroup(2, identity_), 0);
  j["signature"]["algorithm"] = "ed25519";
  EXPECT_EQ(Problem(j.dump()), "signature.root: only in the ed25519-merkle-sha256 form");
}

TEST_F(ReceiptGroup, AMissingPathIsNamed) {
  auto j = Member(SignGroup(2, identity_), 0);
  j["signature"].erase("path");
  EXPECT_EQ(Problem(j.dump()), "signature.path: missing");
}

TEST(Merkle, AnOddNodeIsPromotedNotDuplicated) {
  std::vector<receipt::MerkleHash> leaves{
      receipt::LeafHash(0, 3, "a"), receipt::LeafHash(1, 3, "b"), receipt::LeafHash(2, 3, "c")};
  const auto levels = receipt::MerkleLevels(leaves);
  const auto ab = receipt::NodeHash(leaves[0], leaves[1]);
  EXPECT_EQ(levels.back().front(), receipt::NodeHash(ab, leaves[2]));
  // Leaf c has no sibling at the leaves' level: one step, ab on its left.
  const auto path = receipt::InclusionPath(levels, 2);
  ASSERT_EQ(path.size(), 1u);
  EXPECT_EQ(path[0].side, "left");
  EXPECT_EQ(path[0].hash, receipt::HashHex(ab));
  EXPECT_EQ(receipt::ExpectedSides(2, 3), std::vector<std::string>{"left"});
}

TEST(Merkle, LeavesAndNodesAreDomainSeparated) {
  const auto a = receipt::LeafHash(0, 2, "a");
  const auto b = receipt::LeafHash(1, 2, "b");
  std::string concatenated(reinterpret_cast<const char*>(a.data()), a.size());
  concatenated.append(reinterpret_cast<const char*>(b.data()), b.size());
  EXPECT_NE(receipt::LeafHash(0, 1, concatenated), receipt::NodeHash(a, b));
}

}  // namespace
}  // namespace writ
