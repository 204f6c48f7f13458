#include <gtest/gtest.h>

#include "protocol/messages.h"
#include "sample_messages.h"

namespace writ::protocol {
namespace {

TEST(Names, RulesRoundTripAndHaveDigestSizes) {
  EXPECT_EQ(RuleName(Rule::kXxh3_128), "xxh3-128");
  EXPECT_EQ(RuleName(Rule::kCrc32c), "crc32c");
  EXPECT_EQ(RuleName(Rule::kSha256), "sha256");
  EXPECT_EQ(RuleName(Rule::kXxh3_128Tree1MiB), "xxh3-128-tree-1MiB");
  EXPECT_EQ(RuleName(Rule::kSha256Tree1MiB), "sha256-tree-1MiB");
  for (Rule r : {Rule::kXxh3_128, Rule::kCrc32c, Rule::kSha256, Rule::kXxh3_128Tree1MiB,
                 Rule::kSha256Tree1MiB}) {
    auto parsed = ParseRule(RuleName(r));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(DigestSize(Rule::kXxh3_128), 16u);
  EXPECT_EQ(DigestSize(Rule::kCrc32c), 4u);
  EXPECT_EQ(DigestSize(Rule::kSha256), 32u);
  EXPECT_EQ(DigestSize(Rule::kXxh3_128Tree1MiB), 16u);
  EXPECT_EQ(DigestSize(Rule::kSha256Tree1MiB), 32u);
  EXPECT_EQ(DigestSize(static_cast<Rule>(0)), 0u);
  EXPECT_EQ(RuleName(static_cast<Rule>(9)), "unknown");
}

TEST(Names, OnlyTheSha256RulesAreCryptographic) {
  EXPECT_TRUE(IsCryptographic(Rule::kSha256));
  EXPECT_TRUE(IsCryptographic(Rule::kSha256Tree1MiB));
  EXPECT_FALSE(IsCryptographic(Rule::kXxh3_128));
  EXPECT_FALSE(IsCryptographic(Rule::kCrc32c));
  EXPECT_FALSE(IsCryptographic(Rule::kXxh3_128Tree1MiB));
  EXPECT_FALSE(IsCryptographic(static_cast<Rule>(0)));
}

TEST(Names, UnknownNamesAreRefusedWithTheKnownOnes) {
  auto rule = ParseRule("md5");
  ASSERT_FALSE(rule.ok());
  EXPECT_EQ(rule.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rule.status().message(),
            "unknown digest rule \"md5\" (known: xxh3-128, crc32c, sha256, "
            "xxh3-128-tree-1MiB, sha256-tree-1MiB)");
  EXPECT_FALSE(ParseRule("XXH3-128").ok());  // names are exact
  EXPECT_FALSE(ParseRule("").ok());
  EXPECT_FALSE(ParseRung("submitted").ok());  // a sender-local rung, never on the wire
  EXPECT_FALSE(ParseRetention("replicated:2").ok());
  EXPECT_FALSE(ParseRefuseReason("nope").ok());
}

TEST(Names, Rungs) {
  const std::pair<Rung, std::string_view> table[] = {{Rung::kTransport, "transport"},
                                                     {Rung::kReceived, "received"},
                                                     {Rung::kValidated, "validated"},
                                                     {Rung::kProcessed, "processed"}};
  for (const auto& [rung, name] : table) {
    EXPECT_EQ(RungName(rung), name);
    auto parsed = ParseRung(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, rung);
  }
  EXPECT_FALSE(IsKnown(static_cast<Rung>(0)));
  EXPECT_FALSE(IsKnown(static_cast<Rung>(5)));
}

TEST(Names, RetentionClasses) {
  const std::pair<RetentionClass, std::string_view> table[] = {
      {RetentionClass::kVolatile, "volatile"},
      {RetentionClass::kProcessRestart, "process-restart"},
      {RetentionClass::kPowerLoss, "power-loss"}};
  for (const auto& [retention, name] : table) {
    EXPECT_EQ(RetentionName(retention), name);
    auto parsed = ParseRetention(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, retention);
  }
  EXPECT_FALSE(IsKnown(static_cast<RetentionClass>(4)));
}

TEST(Names, RefuseReasons) {
  const std::pair<RefuseReason, std::string_view> table[] = {
      {RefuseReason::kAuth, "auth"},
      {RefuseReason::kSpace, "space"},
      {RefuseReason::kConflictingId, "conflicting id"},
      {RefuseReason::kOversize, "oversize"},
      {RefuseReason::kMalformed, "malformed"},
      {RefuseReason::kUnknownDelivery, "unknown delivery"},
      {RefuseReason::kLimit, "limit"},
      {RefuseReason::kUnsupported, "unsupported"},
      {RefuseReason::kInternal, "internal"},
      {RefuseReason::kValidation, "validation"},
      {RefuseReason::kRetention, "retention"},
      {RefuseReason::kShuttingDown, "shutting down"},
      {RefuseReason::kProcessing, "processing"},
      {RefuseReason::kTarget, "target"}};
  for (const auto& [reason, name] : table) {
    EXPECT_EQ(RefuseReasonName(reason), name);
    auto parsed = ParseRefuseReason(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, reason);
  }
  // Wire values are fixed once shipped.
  EXPECT_EQ(static_cast<int>(RefuseReason::kInternal), 9);
  EXPECT_EQ(static_cast<int>(RefuseReason::kRetention), 11);
  EXPECT_EQ(static_cast<int>(RefuseReason::kShuttingDown), 12);
  EXPECT_EQ(static_cast<int>(RefuseReason::kProcessing), 13);
  EXPECT_EQ(static_cast<int>(RefuseReason::kTarget), 14);
  EXPECT_FALSE(IsKnown(static_cast<RefuseReason>(0)));
  EXPECT_FALSE(IsKnown(static_cast<RefuseReason>(15)));
}

TEST(Names, MessageTypesFollowTheVariantOrder) {
  const std::string_view expected[] = {"hello",        "announce", "grant",         "commit",
                                       "receipt",      "refuse",   "abort",         "query",
                                       "query-answer", "receipts", "ring",          "deliver",
                                       "slots-free",   "remove",   "remove-answer", "written"};
  const auto samples = testing::AllSamples();
  ASSERT_EQ(samples.size(), std::size(expected));
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(MessageTypeName(samples[i]), expected[i]);
    EXPECT_EQ(static_cast<size_t>(TypeOf(samples[i])), i + 1);
  }
  EXPECT_EQ(MessageTypeName(static_cast<MessageType>(0)), "unknown");
  EXPECT_EQ(MessageTypeName(static_cast<MessageType>(17)), "unknown");
}

}  // namespace
}  // namespace writ::protocol
