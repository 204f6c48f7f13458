#include "vocabulary/digest.h"

#include <gtest/gtest.h>

#include <random>

#include "common/hex.h"
#include "random_bytes.h"
#include "test_util.h"

namespace writ::vocabulary {
namespace {

std::span<const uint8_t> AsBytes(std::string_view s) {
  return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string HexOf(Rule rule, std::span<const uint8_t> bytes) {
  auto digest = DigestOf(rule, bytes);
  EXPECT_TRUE(digest.ok()) << digest.status().ToString();
  return digest.ok() ? ToHex(*digest) : "";
}

// xxHash's own sanity buffer (xxHash tests/sanity_test_vectors.h).
std::vector<uint8_t> XxhSanityBuffer() {
  std::vector<uint8_t> buf(4096 + 64 + 1);
  uint64_t gen = 2654435761u;
  for (auto& b : buf) {
    b = static_cast<uint8_t>(gen >> 56);
    gen *= 11400714785074694797ull;
  }
  return buf;
}

TEST(Digest, Crc32cKnownVectors) {
  EXPECT_EQ(HexOf(Rule::kCrc32c, AsBytes("123456789")), "e3069283");
  EXPECT_EQ(HexOf(Rule::kCrc32c, {}), "00000000");
  // RFC 3720 appendix B.4.
  EXPECT_EQ(HexOf(Rule::kCrc32c, std::vector<uint8_t>(32, 0x00)), "8a9136aa");
  EXPECT_EQ(HexOf(Rule::kCrc32c, std::vector<uint8_t>(32, 0xff)), "62a8ab43");
  std::vector<uint8_t> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(HexOf(Rule::kCrc32c, up), "46dd794e");
  EXPECT_EQ(HexOf(Rule::kCrc32c, down), "113fdb5c");
}

TEST(Digest, Sha256KnownVectors) {
  EXPECT_EQ(HexOf(Rule::kSha256, {}),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexOf(Rule::kSha256, AsBytes("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      HexOf(Rule::kSha256, AsBytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(HexOf(Rule::kSha256, std::vector<uint8_t>(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Digest, Xxh3_128KnownVectors) {
  // {length, high64, low64} for seed 0 over the sanity buffer; the digest is
  // the canonical form, high then low, big-endian.
  struct Vector {
    size_t length;
    uint64_t high, low;
  };
  const Vector vectors[] = {
      {0, 0x99AA06D3014798D8ull, 0x6001C324468D497Full},
      {1, 0xA6CD5E9392000F6Aull, 0xC44BDFF4074EECDBull},
      {6, 0x082AFE0B8162D12Aull, 0x3E7039BDDA43CFC6ull},
      {12, 0x6E3EFD8FC7802B18ull, 0x061A192713F69AD9ull},
      {24, 0x0CE966E4678D3761ull, 0x1E7044D28B1B901Dull},
      {48, 0xA002AC4E5478227Eull, 0xF942219AED80F67Bull},
      {81, 0x4952F58181AB0042ull, 0x5E8BAFB9F95FB803ull},
      {222, 0x337E09641B948717ull, 0xF1AEBD597CEC6B3Aull},
      {403, 0x1B6DE21E332DD73Dull, 0xCDEB804D65C6DEA4ull},
      {512, 0x18D2D110DCC9BCA1ull, 0x617E49599013CB6Bull},
      {2048, 0xF736557FD47073A5ull, 0xDD59E2C3A5F038E0ull},
      {2240, 0xCCB134FBFA7CE49Dull, 0x6E73A90539CF2948ull},
      {2367, 0xE89C0F6FF369B427ull, 0xCB37AEB9E5D361EDull},
  };
  const std::vector<uint8_t> buf = XxhSanityBuffer();
  for (const Vector& v : vectors) {
    char expected[33];
    std::snprintf(expected, sizeof expected, "%016llx%016llx",
                  static_cast<unsigned long long>(v.high), static_cast<unsigned long long>(v.low));
    EXPECT_EQ(HexOf(Rule::kXxh3_128, std::span(buf).first(v.length)), expected)
        << "length " << v.length;
  }
}

TEST(Digest, SizesMatchTheRules) {
  for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256, Rule::kXxh3_128Tree1MiB,
                    Rule::kSha256Tree1MiB}) {
    auto d = DigestOf(rule, AsBytes("x"));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->size(), DigestSize(rule));
  }
}

TEST(Digest, UnknownRule) {
  EXPECT_ERROR(Digester::Create(static_cast<Rule>(0)), ErrorCode::kInvalidArgument,
               "digest: unknown rule 0");
  EXPECT_FALSE(DigestOf(static_cast<Rule>(6), {}).ok());
}

// Random splits, including empty pieces, must equal the one-shot digest.
TEST(Digest, ChunkedUpdateEqualsOneShot) {
  const std::vector<uint8_t> data = writ::testing::RandomBytes(233, 3 * 1024 * 1024 + 17);
  std::mt19937_64 rng(233);
  for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256, Rule::kXxh3_128Tree1MiB,
                    Rule::kSha256Tree1MiB}) {
    SCOPED_TRACE(std::string(RuleName(rule)));
    auto whole = DigestOf(rule, data);
    ASSERT_TRUE(whole.ok());
    auto digester = Digester::Create(rule);
    ASSERT_TRUE(digester.ok());
    EXPECT_EQ((*digester)->rule(), rule);
    for (int trial = 0; trial < 20; ++trial) {
      (*digester)->Reset();
      size_t pos = 0;
      while (pos < data.size()) {
        // Mostly small pieces, sometimes big ones, sometimes none.
        const size_t limit = trial % 4 == 0 ? data.size() : (trial % 2 ? 300 : 70000);
        const size_t n = std::min(data.size() - pos, size_t(rng() % (limit + 1)));
        (*digester)->Update(std::span(data).subspan(pos, n));
        pos += n;
      }
      EXPECT_EQ((*digester)->Finish(), *whole) << "trial " << trial;
    }
    // Byte by byte over a shorter prefix.
    (*digester)->Reset();
    for (size_t i = 0; i < 5000; ++i) (*digester)->Update(std::span(data).subspan(i, 1));
    EXPECT_EQ((*digester)->Finish(), *DigestOf(rule, std::span(data).first(5000)));
  }
}

TEST(Digest, ResetStartsOver) {
  for (Rule rule : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256, Rule::kXxh3_128Tree1MiB,
                    Rule::kSha256Tree1MiB}) {
    auto d = Digester::Create(rule);
    ASSERT_TRUE(d.ok());
    (*d)->Update(AsBytes("something else entirely"));
    (*d)->Reset();
    (*d)->Update(AsBytes("123456789"));
    EXPECT_EQ((*d)->Finish(), *DigestOf(rule, AsBytes("123456789")));
    (*d)->Reset();
    EXPECT_EQ((*d)->Finish(), *DigestOf(rule, {}));
  }
}

TEST(Hex, RoundTrip) {
  const std::vector<uint8_t> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  EXPECT_EQ(ToHex(bytes), "00017f80abff");
  auto back = FromHex("00017F80abFF");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_EQ(ToHex({}), "");
  auto empty = FromHex("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(Hex, Refused) {
  EXPECT_ERROR(FromHex("abc"), ErrorCode::kMalformed, "hex: odd length 3");
  EXPECT_ERROR(FromHex("zz"), ErrorCode::kMalformed, "hex: not a hex digit at offset 0");
  EXPECT_ERROR(FromHex("0g"), ErrorCode::kMalformed, "at offset 1");
  EXPECT_ERROR(FromHex("0x12"), ErrorCode::kMalformed, "at offset 1");
  EXPECT_ERROR(FromHex("12 3"), ErrorCode::kMalformed, "at offset 2");
}

}  // namespace
}  // namespace writ::vocabulary
