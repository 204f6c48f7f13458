#include <gtest/gtest.h>

#include <limits>

#include "protocol/codec.h"
#include "protocol/frame.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

using testing::AllSamples;

Message RoundTrip(const Message& m) {
  const std::vector<uint8_t> frame = Encode(m);
  auto decoded = DecodeFrame(frame, Limits{});
  EXPECT_TRUE(decoded.ok()) << MessageTypeName(m) << ": " << decoded.status().ToString();
  if (!decoded.ok()) return m;
  // The encoding is canonical: decoding then encoding gives the same bytes.
  EXPECT_EQ(Encode(*decoded), frame);
  return *decoded;
}

TEST(CodecRoundTrip, EverySampleMessage) {
  for (const Message& m : AllSamples()) {
    SCOPED_TRACE(std::string(MessageTypeName(m)));
    EXPECT_EQ(RoundTrip(m), m);
  }
}

TEST(CodecRoundTrip, HeaderLayout) {
  for (const Message& m : AllSamples()) {
    const std::vector<uint8_t> f = Encode(m);
    ASSERT_GE(f.size(), kFrameHeaderBytes);
    EXPECT_EQ(std::string(f.begin(), f.begin() + 4), "WRIT");
    EXPECT_EQ(f[4], kProtocolVersion);
    EXPECT_EQ(f[5], 0);
    EXPECT_EQ(f[6], static_cast<uint8_t>(TypeOf(m)));
    EXPECT_EQ(f[7], 0);
    EXPECT_EQ(LoadLe32(&f[8]), f.size() - kFrameHeaderBytes);
  }
}

// Pins the byte layout documented in docs/protocol.md.
TEST(CodecRoundTrip, GoldenCommit) {
  const std::vector<uint8_t> expected = {
      'W', 'R', 'I', 'T', 6,    0,    4,    0,    22,  0,   0, 0,  // header, 22-byte payload
      6,   0,   0,   0,   'R',  'C',  '-',  '2',  '3', '3',        // delivery_id
      4,   0,   0,   0,   0xe3, 0x06, 0x92, 0x83,                  // digest
      0,   0,   0,   0};                                           // signature, empty (unsigned)
  EXPECT_EQ(Encode(Commit{"RC-233", {0xe3, 0x06, 0x92, 0x83}, {}}), expected);
}

TEST(CodecRoundTrip, GoldenAnnounce) {
  Announce a{"x",
             10,
             4,
             Rule::kCrc32c,
             {0xe3, 0x06, 0x92, 0x83},
             Rung::kReceived,
             RetentionClass::kPowerLoss,
             {},
             {},
             {},
             0,
             {},
             {}};
  const std::vector<uint8_t> expected = {'W', 'R', 'I', 'T', 6,    0,    2,    0,
                                         56,  0,   0,   0,         // header, 56-byte payload
                                         1,   0,   0,   0,   'x',  // delivery_id
                                         10,  0,   0,   0,   0,    0,    0,    0,     // bytes
                                         4,   0,   0,   0,   0,    0,    0,    0,     // chunk_size
                                         2,                                           // rule crc32c
                                         4,   0,   0,   0,   0xe3, 0x06, 0x92, 0x83,  // digest
                                         2,                 // until received
                                         3,                 // retention power-loss
                                         0,   0,   0,   0,  // sender_fabric_address (empty)
                                         0,   0,   0,   0,  // sender_key (empty)
                                         0,   0,   0,   0,  // nonce (empty)
                                         0,   0,   0,   0,   0,    0,    0,    0,  // time_ms
                                         0,   0,   0,   0};  // signature (empty)
  EXPECT_EQ(Encode(a), expected);
  EXPECT_EQ(RoundTrip(a), Message(a));
}

TEST(CodecRoundTrip, ExtremeIntegers) {
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
  Grant g{"g", kMax32, 0, kMax64, kMax64, kMax64 - kMax32, kMax32};
  EXPECT_EQ(RoundTrip(g), Message(g));
  Announce a = testing::SampleAnnounce();
  a.bytes = kMax64;
  a.chunk_size = kMax64;
  EXPECT_EQ(RoundTrip(a), Message(a));
  Hello h = testing::SampleHello();
  h.version = 0xffff;  // a newer server: the Hello layout stays readable
  EXPECT_EQ(RoundTrip(h), Message(h));
}

TEST(CodecRoundTrip, EmptyOptionalFields) {
  Announce a = testing::SampleAnnounce();
  a.sender_fabric_address.clear();
  a.bytes = 0;  // an empty delivery: zero chunks, any positive chunk size
  EXPECT_EQ(RoundTrip(a), Message(a));
  EXPECT_EQ(RoundTrip(Refuse{"", RefuseReason::kAuth, ""}),
            Message(Refuse{"", RefuseReason::kAuth, ""}));
  EXPECT_EQ(RoundTrip(Abort{"", ""}), Message(Abort{"", ""}));
}

TEST(CodecRoundTrip, EveryRuleRungRetentionAndReason) {
  for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256}) {
    for (Rung rung : {Rung::kTransport, Rung::kReceived, Rung::kValidated, Rung::kProcessed}) {
      for (RetentionClass r : {RetentionClass::kVolatile, RetentionClass::kProcessRestart,
                               RetentionClass::kPowerLoss}) {
        Announce a = testing::SampleAnnounce();
        a.rule = rule;
        a.digest = testing::Bytes(DigestSize(rule), 1);
        a.until = rung;
        a.retention = r;
        EXPECT_EQ(RoundTrip(a), Message(a));
      }
    }
  }
  for (int reason = 1; reason <= 11; ++reason) {
    Refuse r{"id", static_cast<RefuseReason>(reason), "why"};
    EXPECT_EQ(RoundTrip(r), Message(r));
  }
}

TEST(CodecRoundTrip, FieldsAtTheirLimits) {
  Limits limits;
  Hello h = testing::SampleHello();
  h.receiver_id = std::string(limits.max_id_bytes, 'r');
  h.provider = std::string(limits.max_name_bytes, 'p');
  h.fabric_address = std::vector<uint8_t>(limits.max_address_bytes, 0xff);
  EXPECT_EQ(RoundTrip(h), Message(h));

  Abort a{std::string(limits.max_id_bytes, '~'), std::string(limits.max_detail_bytes, 'd')};
  EXPECT_EQ(RoundTrip(a), Message(a));

  // The largest receipt that fits a frame.
  Receipt r{"RC-233", ""};
  const size_t overhead = kFrameHeaderBytes + 4 + r.delivery_id.size() + 4;
  const size_t pad = limits.max_frame_bytes - overhead - std::string(R"({"p":""})").size();
  r.json = R"({"p":")" + std::string(pad, 'x') + R"("})";
  const auto frame = Encode(r);
  EXPECT_EQ(frame.size(), limits.max_frame_bytes);
  EXPECT_EQ(RoundTrip(r), Message(r));
}

TEST(CodecRoundTrip, Utf8DetailAndJson) {
  Abort a{"RC-233", "Prüfsumme falsch — 校验和错误 🙂"};
  EXPECT_EQ(RoundTrip(a), Message(a));
  Receipt r{"RC-233", "  {\"note\": \"ünïcödé\", \"n\": [1, 2.5, null, true]}\n"};
  EXPECT_EQ(RoundTrip(r), Message(r));
}

}  // namespace
}  // namespace writ::protocol
