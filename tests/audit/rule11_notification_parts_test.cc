// Rule 11: a notification with `portion` covers that portion only.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule11NotificationParts, SomePortionsNotifiedIsPartial) {
  const AuditReport report = AuditBundle("rule11/parts.json");
  const DeliveryReport& d = DeliveryById(report, "P-1");
  EXPECT_EQ(d.notification, NotificationState::kPartial);
  EXPECT_TRUE(SaysSomewhere(d, "2 of 3 portions"));
  EXPECT_TRUE(SaysSomewhere(d, "work request 3"));
  EXPECT_FALSE(Supported(report, "n1"));
}

TEST(Rule11NotificationParts, EveryPortionNotifiedIsEstablished) {
  const AuditReport report = AuditBundle("rule11/parts.json");
  EXPECT_EQ(DeliveryById(report, "P-2").notification, NotificationState::kEstablished);
  EXPECT_TRUE(Supported(report, "n2"));
}

TEST(Rule11NotificationParts, ANullPortionIsAboutTheWholeDelivery) {
  const AuditReport report = AuditBundle("rule11/parts.json");
  EXPECT_EQ(DeliveryById(report, "P-3").notification, NotificationState::kEstablished);
  EXPECT_TRUE(Supported(report, "n3"));
}

TEST(Rule11NotificationParts, APortionOfAnotherDeliveryCoversNothing) {
  const AuditReport report = AuditBundle("rule11/parts.json");
  const DeliveryReport& d = DeliveryById(report, "P-4");
  EXPECT_EQ(d.notification, NotificationState::kNone);
  EXPECT_TRUE(SaysSomewhere(d, "names portion \"6\", which is not a portion of \"P-4\""));
  EXPECT_FALSE(Supported(report, "n4"));
}

TEST(Rule11NotificationParts, PartialIsWrittenPartial) {
  EXPECT_EQ(ToString(NotificationState::kPartial), "partial");
}

}  // namespace
}  // namespace writ::audit::testing
