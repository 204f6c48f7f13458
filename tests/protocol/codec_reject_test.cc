#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "protocol/frame.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

using testing::AllSamples;
using testing::PayloadOf;
using testing::RawFrame;

Result<Message> Decode(const std::vector<uint8_t>& frame, const Limits& limits = Limits{}) {
  return DecodeFrame(frame, limits);
}

// Encodes a message that may be invalid (Encode does not validate).
Result<Message> EncodeDecode(const Message& m, const Limits& limits = Limits{}) {
  return Decode(Encode(m), limits);
}

TEST(CodecReject, TruncatedAtEveryByteOffset) {
  for (const Message& m : AllSamples()) {
    const std::vector<uint8_t> frame = Encode(m);
    for (size_t cut = 0; cut < frame.size(); ++cut) {
      SCOPED_TRACE(std::string(MessageTypeName(m)) + " cut at " + std::to_string(cut));
      const std::vector<uint8_t> prefix(frame.begin(), frame.begin() + cut);
      auto r = Decode(prefix);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), ErrorCode::kMalformed);
      EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
    }
  }
}

// The header agrees with the short payload, so the field reader must notice.
TEST(CodecReject, PayloadTruncatedAtEveryFieldOffset) {
  for (const Message& m : AllSamples()) {
    const std::vector<uint8_t> payload = PayloadOf(Encode(m));
    for (size_t cut = 0; cut < payload.size(); ++cut) {
      SCOPED_TRACE(std::string(MessageTypeName(m)) + " payload cut at " + std::to_string(cut));
      const std::vector<uint8_t> shorter(payload.begin(), payload.begin() + cut);
      auto r = Decode(RawFrame(static_cast<uint8_t>(TypeOf(m)), shorter));
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), ErrorCode::kMalformed);
      // "announce.digest: truncated ..." or "...: declares N bytes, M left ..."
      EXPECT_EQ(r.status().message().rfind(std::string(MessageTypeName(m)) + ".", 0), 0u)
          << r.status().message();
    }
  }
}

TEST(CodecReject, TrailingBytesInPayload) {
  for (const Message& m : AllSamples()) {
    std::vector<uint8_t> payload = PayloadOf(Encode(m));
    payload.push_back(0);
    auto r = Decode(RawFrame(static_cast<uint8_t>(TypeOf(m)), payload));
    EXPECT_ERROR(r, ErrorCode::kMalformed,
                 std::string(MessageTypeName(m)) + ": 1 trailing bytes after the last field");
  }
}

TEST(CodecReject, BytesAfterTheFrame) {
  std::vector<uint8_t> frame = Encode(testing::SampleCommit());
  frame.push_back('x');
  frame.push_back('y');
  EXPECT_ERROR(Decode(frame), ErrorCode::kMalformed,
               "frame: 2 trailing bytes after the commit frame");
}

TEST(CodecReject, OversizeLength) {
  auto r = Decode(RawFrame(4, {}, kProtocolVersion, 0, 0xffffffffu));
  EXPECT_ERROR(r, ErrorCode::kMalformed, "frame.length: commit payload of 4294967295 bytes");
  Limits small;
  small.max_frame_bytes = 64;
  Receipt big{"id", "{\"pad\":\"" + std::string(100, 'x') + "\"}"};
  EXPECT_ERROR(EncodeDecode(big, small), ErrorCode::kMalformed, "exceeds the limit of 52 bytes");
  // Exactly at the limit is fine.
  const auto frame = Encode(testing::SampleCommit());
  small.max_frame_bytes = static_cast<uint32_t>(frame.size());
  EXPECT_TRUE(Decode(frame, small).ok());
  small.max_frame_bytes -= 1;
  EXPECT_FALSE(Decode(frame, small).ok());
}

TEST(CodecReject, UnknownType) {
  const std::vector<uint8_t> payload = PayloadOf(Encode(testing::SampleCommit()));
  for (int type : {0, 17, 42, 255}) {
    EXPECT_ERROR(Decode(RawFrame(static_cast<uint8_t>(type), payload)), ErrorCode::kMalformed,
                 "frame.type: unknown message type " + std::to_string(type));
  }
}

TEST(CodecReject, BadMagic) {
  for (size_t i = 0; i < 4; ++i) {
    std::vector<uint8_t> frame = Encode(testing::SampleCommit());
    frame[i] ^= 0x20;
    EXPECT_ERROR(Decode(frame), ErrorCode::kMalformed, "frame.magic:");
  }
  // An HTTP client knocking on the control port.
  const std::string http = "GET / HTTP/1.1\r\n\r\n";
  EXPECT_ERROR(Decode(std::vector<uint8_t>(http.begin(), http.end())), ErrorCode::kMalformed,
               "frame.magic: 47455420");
}

TEST(CodecReject, OtherVersionsAreUnsupported) {
  const std::vector<uint8_t> payload = PayloadOf(Encode(testing::SampleCommit()));
  // 1: the layout before the commit carried the digest; 2: before `receipts`, group
  // signatures and the hello's max_in_flight; 3: before standing windows (ring, deliver);
  // 4: before `written`; 5: a `deliver` with a commit (digest and signature) of its own.
  for (int version : {0, 1, 2, 3, 4, 5, 7, 0x100, 0xffff}) {
    EXPECT_ERROR(Decode(RawFrame(4, payload, static_cast<uint16_t>(version))),
                 ErrorCode::kUnsupported,
                 "frame.version: " + std::to_string(version) + ", this build speaks 6");
  }
}

TEST(CodecReject, NonZeroFlags) {
  const std::vector<uint8_t> payload = PayloadOf(Encode(testing::SampleCommit()));
  EXPECT_ERROR(Decode(RawFrame(4, payload, kProtocolVersion, 0x80)), ErrorCode::kMalformed,
               "frame.flags: 128, must be 0");
}

TEST(CodecReject, StringLengthBeyondPayload) {
  std::vector<uint8_t> payload = PayloadOf(Encode(testing::SampleCommit()));
  StoreLe32(payload.data(), 0xfffffff0u);  // delivery_id claims ~4 GiB
  EXPECT_ERROR(Decode(RawFrame(4, payload)), ErrorCode::kMalformed,
               "commit.delivery_id: declares 4294967280 bytes, 18 left in the payload");
}

// Enum bytes patched in place: Announce rule/until/retention, Refuse reason.
TEST(CodecReject, BadEnumValues) {
  const Announce a = testing::SampleAnnounce();
  const size_t id_end = 4 + a.delivery_id.size();
  const size_t rule_at = id_end + 16;
  const size_t until_at = rule_at + 1 + 4 + a.digest.size();
  const size_t retention_at = until_at + 1;
  const std::vector<uint8_t> payload = PayloadOf(Encode(a));
  ASSERT_EQ(payload[rule_at], 1);
  ASSERT_EQ(payload[until_at], 3);
  ASSERT_EQ(payload[retention_at], 1);
  for (uint8_t bad : {uint8_t{0}, uint8_t{6}, uint8_t{255}}) {  // 4 and 5: the tree rules
    std::vector<uint8_t> p = payload;
    p[rule_at] = bad;
    EXPECT_ERROR(Decode(RawFrame(2, p)), ErrorCode::kMalformed,
                 "announce.rule: unknown value " + std::to_string(bad));
  }
  for (uint8_t bad : {uint8_t{0}, uint8_t{4}, uint8_t{255}}) {
    std::vector<uint8_t> p = payload;
    p[retention_at] = bad;
    EXPECT_ERROR(Decode(RawFrame(2, p)), ErrorCode::kMalformed,
                 "announce.retention: unknown value " + std::to_string(bad));
  }
  for (uint8_t bad : {uint8_t{0}, uint8_t{5}, uint8_t{200}}) {
    std::vector<uint8_t> p = payload;
    p[until_at] = bad;
    EXPECT_ERROR(Decode(RawFrame(2, p)), ErrorCode::kMalformed,
                 "announce.until: unknown value " + std::to_string(bad));
  }
  const Refuse r = testing::SampleRefuse();
  std::vector<uint8_t> p = PayloadOf(Encode(r));
  const size_t reason_at = 4 + r.delivery_id.size();
  for (uint8_t bad : {uint8_t{0}, uint8_t{15}, uint8_t{255}}) {
    p[reason_at] = bad;
    EXPECT_ERROR(Decode(RawFrame(6, p)), ErrorCode::kMalformed,
                 "refuse.reason: unknown value " + std::to_string(bad));
  }
}

// Flipping any bit must give an error or a message whose encoding is exactly
// the mutated bytes — never a crash and never a lossy decode.
TEST(CodecReject, EveryBitFlipIsRefusedOrCanonical) {
  for (const Message& m : AllSamples()) {
    const std::vector<uint8_t> frame = Encode(m);
    for (size_t i = 0; i < frame.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> mutated = frame;
        mutated[i] ^= static_cast<uint8_t>(1u << bit);
        auto r = Decode(mutated);
        if (r.ok()) {
          EXPECT_EQ(Encode(*r), mutated) << MessageTypeName(m) << " byte " << i << " bit " << bit;
        }
      }
    }
  }
}

TEST(CodecReject, ReceiptsCountIsCheckedBeforeAnyEntry) {
  // A count no frame could hold is refused at once, without reading (or allocating) entries.
  for (uint32_t count : {0u, 65u, 0xffffffffu}) {
    std::vector<uint8_t> payload(4);
    for (int i = 0; i < 4; ++i) payload[i] = static_cast<uint8_t>(count >> (8 * i));
    EXPECT_ERROR(Decode(RawFrame(10, payload)), ErrorCode::kMalformed,
                 "receipts.count: " + std::to_string(count) + ", expected 1 to 64");
  }
}

}  // namespace
}  // namespace writ::protocol
