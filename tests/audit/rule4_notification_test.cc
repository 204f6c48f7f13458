// Rule 4: a notification establishes notification only; never validation.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule4Notification, EstablishesNotificationAndNothingElse) {
  const AuditReport report = AuditBundle("rule4/notification-only.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.notification, NotificationState::kEstablished);
  EXPECT_EQ(d.validation, ValidationState::kUnknown);
  EXPECT_EQ(d.processing, ProcessingState::kUnknown);
  EXPECT_EQ(d.placement, PlacementState::kNotEstablished);
  EXPECT_TRUE(SaysSomewhere(d, "write_with_imm, imm 233"));
  EXPECT_TRUE(SaysSomewhere(d, "establishes neither validation nor processing"));
  EXPECT_TRUE(Supported(report, "n1"));
  EXPECT_FALSE(Supported(report, "n2"));
  EXPECT_FALSE(Supported(report, "n3"));
}

TEST(Rule4Notification, NoNotificationIsNone) {
  const AuditReport report = AuditBundle("rule1/established.json");
  EXPECT_EQ(DeliveryById(report, "D-1").notification, NotificationState::kNone);
}

TEST(Rule4Notification, ANotificationNamingNoDeliveryEstablishesNothing) {
  const AuditReport report = AuditBundle("parse/unknown-fields.json");
  EXPECT_EQ(DeliveryById(report, "D-1").notification, NotificationState::kNone);
}

}  // namespace
}  // namespace writ::audit::testing
