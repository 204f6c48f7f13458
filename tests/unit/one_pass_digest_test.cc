// The sender reads its source once: each chunk is folded into the delivery's digest as it
// is written, and the digest travels in the commit (docs/protocol.md, "Where the digest
// travels"). A real DeliveryRun and a real receiver over FaultInjectingFabric (tcp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/hex.h"
#include "seam_rig.h"
#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::seam {
namespace {

using fabric::WriteFault;
using fabric::WriteFaultSpec;

// Every rule this build knows, so that a rule added later is covered unchanged.
std::vector<Rule> EveryRule() {
  std::vector<Rule> rules;
  for (int v = 1; v < 256; ++v) {
    if (IsKnown(static_cast<Rule>(v))) rules.push_back(static_cast<Rule>(v));
  }
  return rules;
}

std::string WholeBufferDigest(Rule rule, const std::vector<uint8_t>& bytes) {
  auto digester = vocabulary::Digester::Create(rule);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return writ::ToHex((*digester)->Finish());
}

TEST(OnePassDigest, EqualsTheWholeBufferDigestAtEverySizeAndChunkingForEachRule) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  int n = 0;
  for (const uint64_t chunk : {uint64_t{64} << 10, uint64_t{4099}}) {  // even and odd
    const std::vector<uint64_t> sizes = {0,         1,         chunk - 1,    chunk,
                                         chunk + 1, 3 * chunk, 5 * chunk + 7};
    for (const uint64_t size : sizes) {
      const auto bytes = Pattern(static_cast<uint64_t>(n), size);
      for (const Rule rule : EveryRule()) {
        for (const SourcePath path : {SourcePath::kStaging, SourcePath::kZeroCopy}) {
          DeliveryOptions options = SmallChunks("one-pass-" + std::to_string(n++), chunk);
          options.rule = rule;
          options.source = path;
          const std::string what = std::string(RuleName(rule)) + ", " + std::to_string(size) +
                                   " bytes in chunks of " + std::to_string(chunk) +
                                   (path == SourcePath::kStaging ? ", staging" : ", zero-copy");
          const DeliveryOutcome out = rig.Deliver(bytes, options);
          ASSERT_TRUE(out.status.ok()) << what << ": " << out.status.ToString();
          EXPECT_EQ(out.digest_source, "computed") << what;
          EXPECT_EQ(out.delivery.digest, WholeBufferDigest(rule, bytes)) << what;
          ASSERT_FALSE(out.receipts.empty()) << what;
          EXPECT_EQ(out.receipts.back().delivery.digest, out.delivery.digest)
              << what << ": the receiver validated against the committed digest";
          EXPECT_EQ(RungsOf(out),
                    (std::vector<std::string>{"transport", "received", "validated", "retained"}))
              << what;
        }
      }
    }
  }
}

TEST(OnePassDigest, ACorruptedChunkWithoutAnAnnouncedDigestIsRefusedValidation) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  WriteFaultSpec corrupt;
  corrupt.fault = WriteFault::kCorruptSource;  // one byte flipped on the wire's copy
  rig.initiator().FailWrite(1, corrupt);
  const auto bytes = Pattern(21, 3 * (64 << 10) + 5);
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("corrupted-one-pass"));
  EXPECT_EQ(out.digest_source, "computed");
  EXPECT_EQ(out.status.code(), ErrorCode::kValidation) << out.status.ToString();
  // The receiver's refusal names no digest; the sender's error names the one it stated.
  EXPECT_NE(out.status.message().find("do not match the committed xxh3-128 digest"),
            std::string::npos)
      << out.status.ToString();
  EXPECT_NE(out.status.message().find("the computed xxh3-128 digest " +
                                      WholeBufferDigest(Rule::kXxh3_128, bytes) + " was refused"),
            std::string::npos)
      << out.status.ToString();
  EXPECT_FALSE(rig.broken()) << "a failed validation leaves the session usable";
}

TEST(OnePassDigest, AGivenDigestIsAnnouncedAndAWrongOneIsRefusedNamingIt) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  const auto bytes = Pattern(22, 2 * (64 << 10) + 1);
  const std::string right = WholeBufferDigest(Rule::kXxh3_128, bytes);

  DeliveryOptions given = SmallChunks("given");
  given.digest = *writ::FromHex(right);
  const DeliveryOutcome ok = rig.Deliver(bytes, given);
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  EXPECT_EQ(ok.digest_source, "given");
  EXPECT_EQ(ok.delivery.digest, right);

  DeliveryOptions wrong = SmallChunks("given-wrong");
  wrong.digest = std::vector<uint8_t>(16, 0x42);
  const DeliveryOutcome refused = rig.Deliver(bytes, wrong);
  EXPECT_EQ(refused.status.code(), ErrorCode::kValidation) << refused.status.ToString();
  EXPECT_NE(refused.status.message().find("do not match the announced xxh3-128 digest"),
            std::string::npos)
      << refused.status.ToString();
  EXPECT_NE(refused.status.message().find("the given xxh3-128 digest " + writ::ToHex(wrong.digest) +
                                          " was refused"),
            std::string::npos)
      << refused.status.ToString();

  DeliveryOptions short_digest = SmallChunks("given-short");
  short_digest.digest = std::vector<uint8_t>(4, 0x42);
  const DeliveryOutcome invalid = rig.Deliver(bytes, short_digest);
  EXPECT_EQ(invalid.status.code(), ErrorCode::kInvalidArgument) << invalid.status.ToString();
  EXPECT_NE(invalid.status.message().find("4 bytes, xxh3-128 needs 16"), std::string::npos)
      << invalid.status.ToString();
}

}  // namespace
}  // namespace writ::seam
