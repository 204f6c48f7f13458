#include "protocol/validate.h"

#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

using testing::SampleAnnounce;
using testing::SampleGrant;
using testing::SampleHello;

// Each case goes through the wire too: the decoder must refuse what Validate refuses.
void ExpectInvalid(const Message& m, std::string_view expected, const Limits& limits = Limits{}) {
  EXPECT_ERROR(Validate(m, limits), ErrorCode::kMalformed, std::string(expected));
  EXPECT_ERROR(DecodeFrame(Encode(m), limits), ErrorCode::kMalformed, std::string(expected));
}

TEST(Validate, AllSamplesAreValid) {
  for (const Message& m : testing::AllSamples()) {
    EXPECT_TRUE(Validate(m, Limits{}).ok()) << Validate(m, Limits{}).ToString();
  }
}

TEST(Validate, DigestLengthMustMatchTheRule) {
  Announce a = SampleAnnounce();
  a.digest.resize(15);
  ExpectInvalid(a, "announce.digest: 15 bytes, xxh3-128 needs 16");
  a.rule = Rule::kSha256;
  ExpectInvalid(a, "announce.digest: 15 bytes, sha256 needs 32");
  a.rule = Rule::kCrc32c;
  a.digest.resize(4);
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  a.digest.clear();  // not known yet: the commit carries it
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  a.digest.resize(3);
  ExpectInvalid(a, "announce.digest: 3 bytes, crc32c needs 4 (or 0: not known yet)");
}

TEST(Validate, TheCommitCarriesADigest) {
  ExpectInvalid(Commit{"c", {}, {}}, "commit.digest: empty");
  ExpectInvalid(Commit{"c", std::vector<uint8_t>(kMaxDigestBytes + 1), {}},
                "commit.digest: 65 bytes");
  EXPECT_TRUE(Validate(Commit{"c", std::vector<uint8_t>(4), {}}, Limits{}).ok());
  EXPECT_TRUE(Validate(Commit{"c", std::vector<uint8_t>(kMaxDigestBytes), {}}, Limits{}).ok());
  ExpectInvalid(Commit{"c", {1}, std::vector<uint8_t>(63)}, "commit.signature: 63 bytes");
  EXPECT_TRUE(Validate(Commit{"c", {1}, std::vector<uint8_t>(64)}, Limits{}).ok());
}

// A deliver has no commit of its own: its announce carries the digest of the slot's bytes
// (and its signature, when signed, covers it).
TEST(Validate, ADeliverCarriesItsDigestInItsAnnounce) {
  Deliver d = testing::SampleDeliver();
  EXPECT_TRUE(Validate(d, Limits{}).ok());
  d.announce.digest.clear();
  ExpectInvalid(d,
                "deliver.digest: empty, a deliver's announce carries the digest of its slot's "
                "bytes");
  d.announce.digest.resize(15);
  ExpectInvalid(d, "deliver.digest: 15 bytes, xxh3-128 needs 16");
}

TEST(Validate, DeliveryIds) {
  Announce a = SampleAnnounce();
  a.delivery_id = "";
  ExpectInvalid(a, "announce.delivery_id: empty");
  a.delivery_id = "RC 233";
  ExpectInvalid(a, "announce.delivery_id: byte 0x20 at offset 2 is not printable ASCII");
  a.delivery_id = std::string(
      "RC\0"
      "233",
      6);
  ExpectInvalid(a, "announce.delivery_id: byte 0x00 at offset 2");
  a.delivery_id = "caf\xc3\xa9";
  ExpectInvalid(a, "announce.delivery_id: byte 0xc3 at offset 3");
  a.delivery_id = "id\x7f";
  ExpectInvalid(a, "announce.delivery_id: byte 0x7f");
  a.delivery_id = std::string(257, 'a');
  ExpectInvalid(a, "announce.delivery_id: 257 bytes, limit 256");
  Limits tight;
  tight.max_id_bytes = 5;
  a.delivery_id = "RC-233";
  ExpectInvalid(a, "announce.delivery_id: 6 bytes, limit 5", tight);
  for (const char* id : {"RC-233", "a", "x/y:z@1~!", "0123456789abcdef"}) {
    a.delivery_id = id;
    EXPECT_TRUE(Validate(a, Limits{}).ok()) << id;
  }
  ExpectInvalid(Commit{"", {1}, {}}, "commit.delivery_id: empty");
  Query spaced;
  spaced.delivery_id = "a b";
  ExpectInvalid(spaced, "query.delivery_id: byte 0x20");
  ExpectInvalid(Receipt{"", "{}"}, "receipt.delivery_id: empty");
  ExpectInvalid(QueryAnswer{"", "{}"}, "query-answer.delivery_id: empty");
  ExpectInvalid(Grant{"", 1, 0, 0, 1, 0, 1}, "grant.delivery_id: empty");
}

TEST(Validate, ChunkSize) {
  Announce a = SampleAnnounce();
  a.chunk_size = 0;
  ExpectInvalid(a, "announce.chunk_size: 0, must be at least 1");
  a.chunk_size = a.bytes + 1;
  ExpectInvalid(a, "announce.chunk_size: 25165825 is larger than the 25165824-byte delivery");
  a.chunk_size = a.bytes;
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  a.bytes = 0;  // an empty delivery may name any positive chunk size
  a.chunk_size = 1 << 20;
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  a.chunk_size = 0;
  ExpectInvalid(a, "announce.chunk_size: 0");
}

TEST(Validate, Addresses) {
  Hello h = SampleHello();
  h.fabric_address.clear();
  ExpectInvalid(h, "hello.fabric_address: empty");
  h.fabric_address.assign(1025, 1);
  ExpectInvalid(h, "hello.fabric_address: 1025 bytes, limit 1024");
  Announce a = SampleAnnounce();
  a.sender_fabric_address.assign(1025, 1);
  ExpectInvalid(a, "announce.sender_fabric_address: 1025 bytes, limit 1024");
}

TEST(Validate, Hello) {
  Hello h = SampleHello();
  h.version = 0;
  ExpectInvalid(h, "hello.version: 0");
  h = SampleHello();
  h.provider = "";
  ExpectInvalid(h, "hello.provider: empty");
  h.provider = "tcp ofi";
  ExpectInvalid(h, "hello.provider: byte 0x20");
  h.provider = std::string(257, 'p');
  ExpectInvalid(h, "hello.provider: 257 bytes, limit 256");
  h = SampleHello();
  h.receiver_id = "";
  ExpectInvalid(h, "hello.receiver_id: empty");
  h = SampleHello();
  h.max_in_flight = 0;
  ExpectInvalid(h, "hello.max_in_flight: 0");
}

TEST(Validate, GrantFields) {
  Grant g = SampleGrant();
  g.length = 0;
  ExpectInvalid(g, "grant.length: 0, must be at least 1");
  g = SampleGrant();
  g.chunk_count = 0;
  ExpectInvalid(g, "grant.chunk_count: 0, must be at least 1");
  g = SampleGrant();
  g.first_chunk = UINT64_MAX;
  ExpectInvalid(g, "grant.chunk_count: 1 chunks from first_chunk 18446744073709551615 wrap");
  g = SampleGrant();
  g.remote_address = UINT64_MAX - 10;
  g.length = 11;
  ExpectInvalid(g, "grant.length: 11 bytes from remote_address");
  g.length = 10;
  EXPECT_TRUE(Validate(g, Limits{}).ok());
}

TEST(Validate, RefuseAndAbortText) {
  Refuse r{"", RefuseReason::kAuth, "bad token"};
  EXPECT_TRUE(Validate(r, Limits{}).ok());  // connection-level refusal
  r.detail = "line\nbreak";
  ExpectInvalid(r, "refuse.detail: control character at offset 4");
  r.detail = "\x1b[31mred";
  ExpectInvalid(r, "refuse.detail: control character at offset 0");
  r.detail = "c1 \xc2\x9b";  // U+009B, a C1 control (CSI)
  ExpectInvalid(r, "refuse.detail: control character at offset 3");
  r.detail = "bad \xff";
  ExpectInvalid(r, "refuse.detail: invalid UTF-8 at offset 4");
  r.detail = "overlong \xc0\xaf";
  ExpectInvalid(r, "refuse.detail: invalid UTF-8 at offset 9");
  r.detail = "surrogate \xed\xa0\x80";
  ExpectInvalid(r, "refuse.detail: invalid UTF-8 at offset 10");
  r.detail = "cut \xe2\x82";
  ExpectInvalid(r, "refuse.detail: invalid UTF-8 at offset 4");
  r.detail = "too big \xf4\x90\x80\x80";
  ExpectInvalid(r, "refuse.detail: invalid UTF-8 at offset 8");
  r.detail = std::string(4097, 'd');
  ExpectInvalid(r, "refuse.detail: 4097 bytes, limit 4096");
  r.detail = "ok";
  r.delivery_id = "has space";
  ExpectInvalid(r, "refuse.delivery_id: byte 0x20");
  ExpectInvalid(Abort{"", "\t"}, "abort.detail: control character at offset 0");
  ExpectInvalid(Abort{"a b", ""}, "abort.delivery_id: byte 0x20");
}

TEST(Validate, ReceiptJsonMustBeAnObject) {
  ExpectInvalid(Receipt{"id", ""}, "receipt.json: empty");
  ExpectInvalid(Receipt{"id", "  \n"}, "receipt.json: empty");
  ExpectInvalid(Receipt{"id", "[1,2]"}, "receipt.json: not a JSON object");
  ExpectInvalid(Receipt{"id", "\"s\""}, "receipt.json: not a JSON object");
  ExpectInvalid(Receipt{"id", "{"}, "receipt.json: not valid JSON");
  ExpectInvalid(Receipt{"id", "{}{}"}, "receipt.json: not valid JSON");
  ExpectInvalid(Receipt{"id", "{\"a\":1,}"}, "receipt.json: not valid JSON");
  ExpectInvalid(Receipt{"id", "{\"a\":\"\xff\"}"}, "receipt.json: not valid JSON");
  ExpectInvalid(QueryAnswer{"id", "{\"a\":/*c*/1}"}, "query-answer.json: not valid JSON");
  // Deep nesting is parsed without recursion.
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_TRUE(Validate(Receipt{"id", deep}, Limits{}).ok());
  ExpectInvalid(Receipt{"id", "{\"a\":" + std::string(100000, '[') + "}"},
                "receipt.json: not valid JSON");
  // The sending side checks the shape, not the parse (writ serialised it itself).
  EXPECT_TRUE(Validate(Receipt{"id", "{\"a\":1,}"}, Limits{}, /*parse_json=*/false).ok());
  EXPECT_FALSE(Validate(Receipt{"id", "[1]"}, Limits{}, /*parse_json=*/false).ok());
}

// A reader that parses every receipt itself (the sender's link) decodes a receipt's JSON
// once: the decoder checks its shape only; other messages' JSON is still parsed.
TEST(Validate, DecodingLeavesReceiptJsonToAReaderThatParsesItItself) {
  Limits once;
  once.parse_receipt_json = false;
  auto bad_receipt = Encode(Receipt{"id", "{\"a\":1,}"});
  EXPECT_EQ(DecodeFrame(bad_receipt, Limits{}).status().message(), "receipt.json: not valid JSON");
  EXPECT_TRUE(DecodeFrame(bad_receipt, once).ok());
  EXPECT_FALSE(DecodeFrame(Encode(Receipt{"id", "[1]"}), once).ok()) << "still an object";
  EXPECT_FALSE(DecodeFrame(Encode(Receipts{{Receipt{"id", "1"}}}), once).ok());
  auto bad_answer = Encode(QueryAnswer{"id", "{\"a\":1,}"});
  EXPECT_EQ(DecodeFrame(bad_answer, once).status().message(), "query-answer.json: not valid JSON");
}

TEST(ChunkCount, RoundsUp) {
  Announce a = SampleAnnounce();
  EXPECT_EQ(ChunkCount(a), 3u);
  a.bytes = 25165825;
  EXPECT_EQ(ChunkCount(a), 4u);
  a.bytes = 0;
  EXPECT_EQ(ChunkCount(a), 0u);
  a.bytes = UINT64_MAX;
  a.chunk_size = 1;
  EXPECT_EQ(ChunkCount(a), UINT64_MAX);
  a.chunk_size = UINT64_MAX;
  EXPECT_EQ(ChunkCount(a), 1u);
}

TEST(CheckGrantFits, WindowsInsideTheDelivery) {
  Announce a = SampleAnnounce();  // 3 chunks of 8 MiB
  a.bytes = 20 << 20;             // last chunk is 4 MiB
  Grant g = SampleGrant();
  g.first_chunk = 0;
  g.chunk_count = 3;
  g.length = 20 << 20;
  EXPECT_TRUE(CheckGrantFits(a, g).ok());
  g.length -= 1;
  EXPECT_ERROR(CheckGrantFits(a, g), ErrorCode::kMalformed,
               "grant.length: 20971519 bytes, chunks [0, 3) need 20971520");
  g.first_chunk = 2;
  g.chunk_count = 1;
  g.length = 4 << 20;
  EXPECT_TRUE(CheckGrantFits(a, g).ok());
  g.chunk_count = 2;
  EXPECT_ERROR(CheckGrantFits(a, g), ErrorCode::kMalformed,
               "grant.chunk_count: chunks [2, +2) run past the 3 chunks of the delivery");
  g.first_chunk = 3;
  g.chunk_count = 1;
  EXPECT_ERROR(CheckGrantFits(a, g), ErrorCode::kMalformed, "run past the 3 chunks");
  g = SampleGrant();
  g.delivery_id = "other";
  EXPECT_ERROR(CheckGrantFits(a, g), ErrorCode::kMalformed,
               "grant.delivery_id: \"other\", the announced delivery is \"RC-233\"");
  a.bytes = 0;
  g = SampleGrant();
  g.first_chunk = 0;
  EXPECT_ERROR(CheckGrantFits(a, g), ErrorCode::kMalformed, "run past the 0 chunks");
}

TEST(CheckGrantFits, HugeDeliveriesDoNotOverflow) {
  Announce a = SampleAnnounce();
  a.bytes = UINT64_MAX;
  a.chunk_size = uint64_t{1} << 63;  // two chunks, the last one 2^63 - 1 bytes
  Grant g = SampleGrant();
  g.first_chunk = 1;
  g.chunk_count = 1;
  g.remote_address = 0;
  g.length = (uint64_t{1} << 63) - 1;
  EXPECT_TRUE(CheckGrantFits(a, g).ok());
  g.length -= 1;
  EXPECT_FALSE(CheckGrantFits(a, g).ok());
}

TEST(Validate, ReceiptsHoldOneToSixtyFourValidReceipts) {
  ExpectInvalid(Receipts{}, "receipts.count: 0, expected 1 to 64");
  ExpectInvalid(Receipts{std::vector<Receipt>(65, Receipt{"id", "{}"})},
                "receipts.count: 65, expected 1 to 64");
  ExpectInvalid(Receipts{{Receipt{"id", "{}"}, Receipt{"", "{}"}}}, "receipts.delivery_id: empty");
  ExpectInvalid(Receipts{{Receipt{"id", "{}"}, Receipt{"id", "[1]"}}},
                "receipts.json: not a JSON object");
  EXPECT_TRUE(Validate(Receipts{std::vector<Receipt>(64, Receipt{"id", "{}"})}, Limits{}).ok());
}

// A scatter-gather announce's region table: bounded, summing to exactly `bytes`.
TEST(Validate, RegionLengthsMustAddUpToTheDelivery) {
  Announce a = SampleAnnounce();  // 25165824 bytes
  a.region_lengths = {8388608, 0, 16777216};
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  auto decoded = DecodeFrame(Encode(a), Limits{});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<Announce>(*decoded).region_lengths, a.region_lengths);
  a.region_lengths = {8388608, 16777215};
  ExpectInvalid(a,
                "announce.region_lengths: the regions add up to 25165823 bytes, the "
                "delivery is 25165824");
  a.region_lengths = {25165824, 1};
  ExpectInvalid(a, "announce.region_lengths: the regions add up to more than the");
  a.region_lengths = {UINT64_MAX, 2};  // a sum that would wrap
  ExpectInvalid(a, "announce.region_lengths: the regions add up to more than the");
}

// An addressed announce's target block (docs/protocol.md, "Addressed deliveries").
TEST(Validate, ATargetIsANameWithAnOffsetThatDoesNotWrap) {
  Announce a = SampleAnnounce();
  a.target = "kv-cache";
  a.target_offset = 1 << 20;
  EXPECT_TRUE(Validate(a, Limits{}).ok());
  a.region_lengths = {8388608, 16777216};
  auto decoded = DecodeFrame(Encode(a), Limits{});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<Announce>(*decoded), a);
  a.target = "kv cache";
  ExpectInvalid(a, "announce.target: byte 0x20 at offset 2");
  a.target = "kv";
  a.target_offset = UINT64_MAX - 10;
  ExpectInvalid(a, "announce.target_offset: offset plus bytes pass 2^64");
  a.target.clear();
  a.target_offset = 4096;  // not encodable: the wire has no block without a target
  EXPECT_ERROR(Validate(a, Limits{}), ErrorCode::kMalformed,
               "announce.target_offset: set without a target");
}

TEST(Validate, AnEmptyTargetOrAnotherMarkOnTheWireIsMalformed) {
  std::vector<uint8_t> payload = testing::PayloadOf(Encode(SampleAnnounce()));
  std::vector<uint8_t> empty_target = payload;
  const uint8_t block[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  empty_target.insert(empty_target.end(), std::begin(block), std::end(block));
  EXPECT_ERROR(DecodeFrame(testing::RawFrame(2, empty_target), Limits{}), ErrorCode::kMalformed,
               "announce.target: empty");
  Announce with_regions = SampleAnnounce();
  with_regions.region_lengths = {25165824};
  std::vector<uint8_t> other_mark = testing::PayloadOf(Encode(with_regions));
  const uint8_t mark[] = {0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  other_mark.insert(other_mark.end(), std::begin(mark), std::end(mark));
  EXPECT_ERROR(DecodeFrame(testing::RawFrame(2, other_mark), Limits{}), ErrorCode::kMalformed,
               "announce.target_mark");
}

TEST(Validate, AnOversizeRegionTableIsRefused) {
  Announce a = SampleAnnounce();
  Limits limits;
  limits.max_regions = 4;
  a.region_lengths = {25165824 - 4, 1, 1, 1, 1};
  ExpectInvalid(a, "announce.region_lengths: 5 regions, limit 4", limits);
  a.region_lengths.pop_back();
  a.region_lengths[0] += 1;
  EXPECT_TRUE(Validate(a, limits).ok());
}

TEST(Validate, AnEmptyRegionTableOnTheWireIsMalformed) {
  std::vector<uint8_t> payload = testing::PayloadOf(Encode(SampleAnnounce()));
  payload.insert(payload.end(), 4, 0);  // region_count 0
  EXPECT_ERROR(DecodeFrame(testing::RawFrame(2, payload), Limits{}), ErrorCode::kMalformed,
               "announce.region_count: 0");
  payload.back() = 0x10;  // 2^28 regions declared, none present: refused before any allocation
  EXPECT_ERROR(DecodeFrame(testing::RawFrame(2, payload), Limits{}), ErrorCode::kMalformed,
               "announce.region_lengths: truncated");
}

}  // namespace
}  // namespace writ::protocol
