// writ verify reads exactly one JSON document in one spelling (issue 31), and every
// receipt in whatever writ writes: an array, send/query --json, --out's receipts file,
// an evidence bundle (issue 28).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "receipt/signing.h"
#include "writ/receipt.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

std::string VerifyDocSignedReceipt(const receipt::Identity& identity) {
  Receipt r;
  r.rung = ReceiptRung::kValidated;
  r.delivery = {"doc-1", 4, "crc32c", "e3069283", 1, 4};
  r.observer = "receiver application";
  r.issuer = "writ-serve@test";
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {"rdma_write_with_imm", "tcp", "tcp", "lo", "dram", "writ", "delivery", {}};
  r.statement = "validated";
  r.does_not_establish = "retention";
  r.rule_passed = "crc32c of the complete delivery";
  auto text = receipt::SignReceiptToJson(r, identity);
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

CommandRun VerifyText(const TempDir& dir, const std::string& text,
                      std::vector<std::string> extra = {}) {
  const std::string path = dir.File("doc.json");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  std::vector<std::string> args{"verify", path};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunWrit(args);
}

std::string Upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

bool VerifySays(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(HostileVerify, ExactlyOneDocumentIsRead) {
  TempDir dir;
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  const std::string valid = VerifyDocSignedReceipt(*identity);
  ASSERT_EQ(VerifyText(dir, valid).exit_code, 0);

  json forged = json::parse(valid);
  forged["delivery"]["id"] = "forged";
  CommandRun after_nul = VerifyText(dir, valid + std::string(1, '\0') + forged.dump());
  EXPECT_EQ(after_nul.exit_code, 5) << "a forged object after a NUL byte: " << after_nul.out;
  EXPECT_TRUE(VerifySays(after_nul.err, "NUL byte")) << after_nul.err;

  CommandRun with_bom = VerifyText(dir, "\xEF\xBB\xBF" + valid);
  EXPECT_EQ(with_bom.exit_code, 5) << with_bom.out;
  EXPECT_TRUE(VerifySays(with_bom.err, "byte order mark")) << with_bom.err;

  CommandRun trailing = VerifyText(dir, valid + forged.dump());
  EXPECT_EQ(trailing.exit_code, 5) << "two documents: " << trailing.out;
}

TEST(HostileVerify, HexHasOneSpelling) {
  TempDir dir;
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  const json valid = json::parse(VerifyDocSignedReceipt(*identity));
  const std::string key = valid["signature"]["public_key"];

  json upper_key = valid;
  upper_key["signature"]["public_key"] = Upper(key);
  CommandRun upper = VerifyText(dir, upper_key.dump());
  EXPECT_EQ(upper.exit_code, 5) << "upper-case public_key verified without --key: " << upper.out;
  EXPECT_TRUE(VerifySays(upper.err, "signature.public_key: not lowercase hex")) << upper.err;

  json upper_digest = valid;
  upper_digest["delivery"]["digest"] = "E3069283";
  EXPECT_EQ(VerifyText(dir, upper_digest.dump()).exit_code, 5);

  // --key is the operator's input, not the receipt's: either case names the same key.
  EXPECT_EQ(VerifyText(dir, valid.dump(), {"--key", key}).exit_code, 0);
  CommandRun pinned_upper = VerifyText(dir, valid.dump(), {"--key", Upper(key)});
  EXPECT_EQ(pinned_upper.exit_code, 0) << pinned_upper.err;
}

// Writes `value` to DIR/name and verifies it.
CommandRun VerifyJson(const TempDir& dir, const std::string& name, const json& value) {
  std::ofstream(dir.File(name), std::ios::trunc) << value.dump(2);
  return RunWrit({"verify", dir.File(name)});
}

TEST(HostileVerify, ReadsWhatWritWrites) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.File("out").c_str(), 0700), 0);
  WritePatternFile(dir.File("data"), 11, 1 << 20);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("server"), "--out", dir.File("out")});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "d1",
                             "--identity", dir.File("sender"), "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const size_t n = sent.json["receipts"].size();
  ASSERT_GE(n, 3u) << sent.out;
  const std::string all_valid = std::to_string(n) + " of " + std::to_string(n) + " receipts valid";

  CommandRun doc = VerifyJson(dir, "send.json", sent.json);
  EXPECT_EQ(doc.exit_code, 0) << doc.out << doc.err;
  EXPECT_TRUE(VerifySays(doc.out, "receipts[0]: valid: transport receipt for d1")) << doc.out;
  EXPECT_TRUE(VerifySays(doc.out, all_valid)) << doc.out;

  CommandRun array = VerifyJson(dir, "array.json", sent.json["receipts"]);
  EXPECT_EQ(array.exit_code, 0) << array.out << array.err;
  EXPECT_TRUE(VerifySays(array.out, "[1]: valid: received receipt for d1")) << array.out;

  CommandRun out_file = RunWrit({"verify", dir.File("out/d1.receipts.json")});
  EXPECT_EQ(out_file.exit_code, 0) << out_file.out << out_file.err;
  EXPECT_TRUE(VerifySays(out_file.out, "receipts valid")) << out_file.out;

  CommandRun queried = RunWrit({"query", "d1", "--to", serve->address(), "--json"});
  ASSERT_EQ(queried.exit_code, 0) << queried.err;
  CommandRun query_doc = VerifyJson(dir, "query.json", queried.json);
  EXPECT_EQ(query_doc.exit_code, 0) << query_doc.out << query_doc.err;
  EXPECT_TRUE(VerifySays(query_doc.out, "receipts valid")) << query_doc.out;

  // One altered receipt among valid ones: each reported, exit 5.
  json altered = sent.json["receipts"];
  altered[1]["delivery"]["bytes"] = 1;
  CommandRun mixed = VerifyJson(dir, "mixed.json", altered);
  EXPECT_EQ(mixed.exit_code, 5) << mixed.out;
  EXPECT_TRUE(VerifySays(mixed.out, "[0]: valid:")) << mixed.out;
  EXPECT_TRUE(VerifySays(mixed.out, "[1]: invalid receipt:")) << mixed.out;
  EXPECT_TRUE(VerifySays(mixed.out, std::to_string(n - 1) + " of " + std::to_string(n)))
      << mixed.out;

  CommandRun junk = VerifyJson(dir, "junk.json", json{{"hello", 1}});
  EXPECT_EQ(junk.exit_code, 5);
  EXPECT_TRUE(VerifySays(junk.err, "not a receipt")) << junk.err;
}

}  // namespace
}  // namespace writ::testing
