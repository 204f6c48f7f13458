// Rule 12: an acknowledgement with result failed, naming the delivery and its rule, is a fact.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule12FailedValidation, AFailedAcknowledgementWithItsRuleFailsValidation) {
  const AuditReport report = AuditBundle("rule12/failed.json");
  const DeliveryReport& d = DeliveryById(report, "F-1");
  EXPECT_EQ(d.validation, ValidationState::kFailed);
  EXPECT_TRUE(SaysSomewhere(d, "failed \"sha256 of the complete delivery\""));
  EXPECT_FALSE(Supported(report, "v1"));
  EXPECT_FALSE(Supported(report, "p1"));  // processed, but its validation failed
}

TEST(Rule12FailedValidation, WithoutItsRuleItIsUnresolved) {
  const AuditReport report = AuditBundle("rule12/failed.json");
  const DeliveryReport& d = DeliveryById(report, "F-2");
  EXPECT_EQ(d.validation, ValidationState::kUnresolved);
  EXPECT_TRUE(SaysSomewhere(d, "failed validation but names no rule"));
  EXPECT_FALSE(Supported(report, "v2"));
}

TEST(Rule12FailedValidation, FailedOutranksUnresolved) {
  const AuditReport report = AuditBundle("rule12/failed.json");
  EXPECT_EQ(DeliveryById(report, "F-3").validation, ValidationState::kFailed);
}

TEST(Rule12FailedValidation, FailedNeverOutranksEstablished) {
  const AuditReport report = AuditBundle("rule12/failed.json");
  const DeliveryReport& d = DeliveryById(report, "F-4");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_TRUE(SaysSomewhere(d, "does not outrank an established validation"));
  EXPECT_TRUE(Supported(report, "v4"));
}

TEST(Rule12FailedValidation, FailedIsAQuestionAndAWord) {
  const AuditReport report = AuditBundle("rule12/failed.json");
  EXPECT_EQ(ToString(ValidationState::kFailed), "failed");
  const std::string q =
      "Delivery \"F-1\" failed validation: was it sent again, and where is the acknowledgement "
      "of that attempt?";
  EXPECT_EQ(std::count(report.questions.begin(), report.questions.end(), q), 1);
}

}  // namespace
}  // namespace writ::audit::testing
