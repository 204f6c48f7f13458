// Rule 5: validation is established only by an acknowledgement that names the
// delivery, has result validated or processed, and names its rule; a wrong
// byte count does not establish it; one that does not identify the delivery
// or the result makes it unresolved.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule5Validation, NamedDeliveryResultAndRuleEstablishIt) {
  const AuditReport report = AuditBundle("rule5/validated.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_EQ(d.processing, ProcessingState::kUnknown);
  EXPECT_TRUE(SaysSomewhere(d, "passed \"sha256 of the complete delivery\""));
  EXPECT_TRUE(Supported(report, "v1"));
  EXPECT_FALSE(Supported(report, "p1"));
}

TEST(Rule5Validation, TheRightDeliveryWithTheWrongByteCountIsUnresolved) {
  const AuditReport report = AuditBundle("rule5/wrong-bytes.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kUnresolved);
  EXPECT_TRUE(SaysSomewhere(d, "with 16,777,216 bytes, but the delivery has 25,165,824"));
  EXPECT_FALSE(Supported(report, "v1"));
  EXPECT_FALSE(d.questions.empty());
}

TEST(Rule5Validation, AnAcknowledgementNamingNoDeliveryIsUnresolved) {
  const AuditReport report = AuditBundle("rule5/no-delivery.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kUnresolved);
  EXPECT_TRUE(SaysSomewhere(d, "name no delivery") || SaysSomewhere(d, "names no delivery"));
  EXPECT_FALSE(Supported(report, "v1"));
}

TEST(Rule5Validation, AnAcknowledgementWithoutResultIsUnresolved) {
  const AuditReport report = AuditBundle("rule5/no-result.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").validation, ValidationState::kUnresolved);
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "RC-233"), "states no result"));
}

TEST(Rule5Validation, AnAcknowledgementWithoutRuleDoesNotEstablishIt) {
  const AuditReport report = AuditBundle("rule5/no-rule.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").validation, ValidationState::kUnresolved);
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "RC-233"), "names no rule"));
  EXPECT_FALSE(Supported(report, "v1"));
}

TEST(Rule5Validation, AnUnstatedByteCountIsNotAWrongOne) {
  const AuditReport report = AuditBundle("rule5/no-bytes.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_TRUE(SaysSomewhere(d, "states no byte count"));
}

TEST(Rule5Validation, ResultProcessedAlsoEstablishesValidation) {
  const AuditReport report = AuditBundle("rule5/processed-result.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_EQ(d.processing, ProcessingState::kEstablished);
  EXPECT_TRUE(Supported(report, "v1"));
  EXPECT_TRUE(Supported(report, "p1"));
}

TEST(Rule5Validation, AnAcknowledgementOfAnotherDeliveryLeavesItUnknown) {
  const AuditReport report = AuditBundle("rule5/other-delivery.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").validation, ValidationState::kUnknown);
}

TEST(Rule5Validation, OneEstablishingAcknowledgementSufficesAndTheOtherIsReported) {
  const AuditReport report = AuditBundle("rule5/conflicting.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_TRUE(SaysSomewhere(d, "acknowledgement \"partial\""));
}

}  // namespace
}  // namespace writ::audit::testing
