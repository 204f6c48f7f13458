// The fixed-layout receipt writer (src/receipt/canonical_json.h) gives exactly the bytes the
// JSON document it replaced gave (tests/support/receipt_dom_reference.h): every rung, every
// retention class, lone and group signatures, unsigned, and ids and notes with escapes and
// unicode. The signed form did not change, so receipts issued before still verify.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "receipt/canonical_json.h"
#include "receipt/signing.h"
#include "receipt_dom_reference.h"
#include "sample_receipt.h"
#include "writ/receipt.h"

namespace writ {
namespace {

using dom_reference::DomReceiptText;

const std::vector<std::string>& OddTexts() {
  static const std::vector<std::string> texts = {
      "RC-1",
      "",
      "with \"quotes\" and \\backslash\\ and /slash",
      std::string("controls \x01\x02\x1f and \b\f\n\r\t end"),
      std::string("nul \0 inside", 12),
      "del \x7f and tilde ~",
      "latin \xc3\xa9\xc3\xa8 cjk \xe6\x97\xa5\xe6\x9c\xac emoji \xf0\x9f\x98\x80",
      "separators \xe2\x80\xa8 \xe2\x80\xa9 bidi \xe2\x80\xae",
      "c1 \xc2\x85 bom \xef\xbb\xbf max \xf4\x8f\xbf\xbf",
      std::string(300, 'x') + "\"",
  };
  return texts;
}

Receipt Base(ReceiptRung rung, const std::string& id, size_t variant) {
  Receipt r;
  r.rung = rung;
  const uint64_t big = variant % 2 ? UINT64_MAX : 4096;
  r.delivery = {id, big, "xxh3-128", "00112233445566778899aabbccddeeff", variant, big / 2};
  r.issuer = "writ-serve@127.0.0.1:7233";
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {
      "rdma_write_with_imm", "tcp", "tcp;ofi_rxm", "lo", "dram", "writ 0.1.0", "delivery", {}};
  for (size_t i = 0; i < variant % 4; ++i)
    r.context.notes.push_back(OddTexts()[(i + variant) % 10]);
  r.statement = "statement of " + id;
  r.does_not_establish = variant % 3 ? "retention" : "";
  return r;
}

// Every rung, each with its own fields; retained in each retention class.
std::vector<Receipt> EveryShape(const std::string& id, size_t variant) {
  std::vector<Receipt> out;
  Receipt transport = Base(ReceiptRung::kTransport, id, variant);
  transport.observer = "sender";
  transport.observed_chunks = variant;
  out.push_back(transport);
  Receipt received = Base(ReceiptRung::kReceived, id, variant);
  received.observer = "receiver";
  if (variant % 2) received.observed_chunks = 0;
  out.push_back(received);
  Receipt validated = Base(ReceiptRung::kValidated, id, variant);
  validated.observer = "receiver application";
  validated.rule_passed = "xxh3-128 of the complete delivery " + id;
  out.push_back(validated);
  Receipt processed = Base(ReceiptRung::kProcessed, id, variant);
  processed.observer = "receiver application hook";
  processed.processing_step = "hook " + id;
  out.push_back(processed);
  for (const char* retention : {"volatile", "process-restart", "power-loss"}) {
    Receipt retained = Base(ReceiptRung::kRetained, id, variant);
    retained.observer = "receiver store";
    retained.retention = RetentionPromise{retention, "pwrite then fsync " + id, retention,
                                          "the bytes as received", "fsync ok\n"};
    out.push_back(retained);
  }
  return out;
}

std::vector<Receipt> ManyReceipts() {
  std::vector<Receipt> all;
  size_t variant = 0;
  for (const std::string& id : OddTexts()) {
    for (Receipt& r : EveryShape(id, variant++)) all.push_back(std::move(r));
  }
  return all;
}

class ReceiptWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    auto identity = receipt::Identity::Generate();
    ASSERT_TRUE(identity.ok()) << identity.status().ToString();
    identity_.emplace(std::move(identity).value());
  }
  std::optional<receipt::Identity> identity_;
};

TEST_F(ReceiptWriter, UnsignedBytesAreTheDocumentsBytes) {
  const std::vector<Receipt> all = ManyReceipts();
  ASSERT_EQ(all.size(), 70u);
  for (const Receipt& r : all) {
    EXPECT_EQ(ReceiptToJson(r), DomReceiptText(r)) << r.delivery.id;
    EXPECT_EQ(ReceiptSigningBytes(r), DomReceiptText(r, false)) << r.delivery.id;
  }
}

TEST_F(ReceiptWriter, LoneSignedBytesAreTheDocumentsBytes) {
  for (Receipt r : ManyReceipts()) {
    auto text = receipt::SignReceiptToJson(r, *identity_);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    ASSERT_TRUE(r.signature.has_value());
    EXPECT_EQ(*text, DomReceiptText(r)) << r.delivery.id;
    EXPECT_EQ(ReceiptToJson(r), *text);
    EXPECT_EQ(ReceiptSigningBytes(r), DomReceiptText(r, false));
    if (r.delivery.id.empty()) continue;  // refused when read: an id is never empty
    auto parsed = ReceiptFromJson(*text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, r);
  }
}

TEST_F(ReceiptWriter, GroupSignedBytesAreTheDocumentsBytes) {
  const std::vector<Receipt> all = ManyReceipts();
  size_t begin = 0;
  for (size_t size : {2, 3, 5, 7, 16, 37}) {
    std::vector<Receipt> group(all.begin() + begin, all.begin() + begin + size);
    begin = (begin + size) % (all.size() - 37);
    auto texts = receipt::SignReceiptGroupToJson(group, *identity_);
    ASSERT_TRUE(texts.ok()) << texts.status().ToString();
    ASSERT_EQ(texts->size(), size);
    for (size_t i = 0; i < size; ++i) {
      EXPECT_EQ((*texts)[i], DomReceiptText(group[i])) << "group of " << size << ", leaf " << i;
    }
  }
}

// The receiver's signer writes each group member straight from the tree: the same bytes as
// the texts whose signatures are built as structures first (Ed25519 is deterministic).
TEST_F(ReceiptWriter, GroupTextsWrittenFromTheTreeAreTheSameBytes) {
  const std::vector<Receipt> all = ManyReceipts();
  for (size_t size : {1, 2, 3, 5, 16, 37}) {
    std::vector<Receipt> filled(all.begin(), all.begin() + size);
    std::vector<Receipt> unfilled = filled;
    auto reference = receipt::SignReceiptGroupToJson(filled, *identity_);
    auto from_tree = receipt::SignReceiptGroupJsonOnly(unfilled, *identity_);
    ASSERT_TRUE(reference.ok() && from_tree.ok());
    EXPECT_EQ(*from_tree, *reference) << "group of " << size;
  }
}

// Receipts as a receiver issues them (consistent, so that they verify), with ids that need
// escaping: signed alone and as groups, each text verifies against its key.
TEST_F(ReceiptWriter, SignedTextsVerify) {
  std::vector<Receipt> receipts;
  for (const char* id : {"plain-1", "q\"uote", "back\\slash", "tilde~and/slash"}) {
    receipts.push_back(SampleReceipt(ReceiptRung::kReceived, id));
    receipts.push_back(SampleReceipt(ReceiptRung::kValidated, id));
  }
  for (size_t size : {1, 2, 3, 8}) {
    std::vector<Receipt> group(receipts.begin(), receipts.begin() + size);
    auto texts = receipt::SignReceiptGroupToJson(group, *identity_);
    ASSERT_TRUE(texts.ok()) << texts.status().ToString();
    for (size_t i = 0; i < size; ++i) {
      auto parsed = ReceiptFromJson((*texts)[i]);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      EXPECT_EQ(*parsed, group[i]);
      Status verified = VerifyReceipt(*parsed, receipt::PublicKeyHex(identity_->public_key()));
      EXPECT_TRUE(verified.ok()) << "group of " << size << ", leaf " << i << ": "
                                 << verified.ToString();
    }
  }
}

// Random valid UTF-8 (every code point class) in every string field.
std::string RandomText(std::mt19937_64& rng) {
  std::string out;
  const size_t n = rng() % 24;
  for (size_t i = 0; i < n; ++i) {
    uint32_t cp = 0;
    switch (rng() % 4) {
      case 0: cp = rng() % 0x80; break;
      case 1: cp = 0x80 + rng() % (0x800 - 0x80); break;
      case 2: cp = 0x800 + rng() % (0x10000 - 0x800); break;
      default: cp = 0x10000 + rng() % (0x110000 - 0x10000); break;
    }
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

TEST_F(ReceiptWriter, RandomUnicodeFieldsAreTheDocumentsBytes) {
  std::mt19937_64 rng(26);
  for (int i = 0; i < 2000; ++i) {
    std::vector<Receipt> shapes = EveryShape(RandomText(rng), static_cast<size_t>(i));
    Receipt& r = shapes[static_cast<size_t>(i) % shapes.size()];
    r.issuer = RandomText(rng);
    r.statement = RandomText(rng);
    r.context.device = RandomText(rng);
    r.context.notes.push_back(RandomText(rng));
    if (r.retention) r.retention->evidence = RandomText(rng);
    ASSERT_EQ(ReceiptToJson(r), DomReceiptText(r)) << i;
  }
}

// The writer skips plain bytes eight at a time: every byte value, at every place in and
// across a word, before and after a run of plain ones, is still written as the document did.
TEST_F(ReceiptWriter, EveryByteAtEveryPlaceOfAWordIsTheDocumentsBytes) {
  Receipt r = EveryShape("id", 0)[2];
  Receipt expected = r;
  // A lone byte of 0x80 or more is not UTF-8: the writer puts U+FFFD in its place, which the
  // document (it refuses such bytes) is given instead.
  const auto as_document = [](std::string text, size_t at) {
    if (static_cast<unsigned char>(text[at]) >= 0x80) text.replace(at, 1, "\xef\xbf\xbd");
    return text;
  };
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t at = 0; at < 17; ++at) {
      std::string text(24, 'a');
      text[at] = static_cast<char>(byte);
      r.statement = text;
      expected.statement = as_document(text, at);
      ASSERT_EQ(ReceiptToJson(r), DomReceiptText(expected)) << "byte " << byte << " at " << at;
      r.statement = text.substr(0, at + 1);  // the byte last, in a word or in the tail
      expected.statement = as_document(r.statement, at);
      ASSERT_EQ(ReceiptToJson(r), DomReceiptText(expected)) << "byte " << byte << " last at " << at;
    }
  }
}

TEST_F(ReceiptWriter, ABytesThatIsNotUtf8IsWrittenAsTheReplacementCharacter) {
  Receipt r = EveryShape("id", 0)[2];
  r.statement = "bad \xff byte and truncated \xe6\x97";
  const std::string text = ReceiptToJson(r);
  EXPECT_NE(text.find("\"statement\":\"bad \xef\xbf\xbd byte and truncated "
                      "\xef\xbf\xbd\xef\xbf\xbd\""),
            std::string::npos)
      << text;
  EXPECT_TRUE(ReceiptFromJson(text).ok());
}

TEST_F(ReceiptWriter, AppendsWithoutTouchingWhatIsThere) {
  const Receipt r = EveryShape("id", 3)[4];
  std::string out = "prefix";
  receipt::AppendReceiptJson(out, r);
  EXPECT_EQ(out, "prefix" + DomReceiptText(r));
}

}  // namespace
}  // namespace writ
