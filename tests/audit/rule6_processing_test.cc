// Rule 6: processing is established only by an acknowledgement with result
// processed naming the delivery.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule6Processing, ResultProcessedNamingTheDeliveryEstablishesIt) {
  const AuditReport report = AuditBundle("rule6/processed.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.processing, ProcessingState::kEstablished);
  // No rule named: processing without validation.
  EXPECT_EQ(d.validation, ValidationState::kUnresolved);
  EXPECT_TRUE(Supported(report, "p1"));
  EXPECT_FALSE(Supported(report, "v1"));
  EXPECT_TRUE(Supported(report, "j1"));
}

TEST(Rule6Processing, ValidatedIsNotProcessed) {
  const AuditReport report = AuditBundle("rule6/validated-only.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_EQ(d.processing, ProcessingState::kUnknown);
  EXPECT_TRUE(SaysSomewhere(d, "neither done nor failed"));
  EXPECT_FALSE(Supported(report, "p1"));
  EXPECT_FALSE(Supported(report, "j1"));
}

TEST(Rule6Processing, AWrongByteCountIsAboutOtherBytes) {
  const AuditReport report = AuditBundle("rule6/processed-wrong-bytes.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").processing, ProcessingState::kUnknown);
  EXPECT_FALSE(Supported(report, "p1"));
}

TEST(Rule6Processing, AnAcknowledgementNamingNoDeliveryDoesNotEstablishIt) {
  const AuditReport report = AuditBundle("rule6/processed-unnamed.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").processing, ProcessingState::kUnknown);
}

}  // namespace
}  // namespace writ::audit::testing
