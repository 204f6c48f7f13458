// Rule 9: at completion level inject a success says only that the source buffer may be reused.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule9Inject, ASuccessAtInjectIsAtMostIncomplete) {
  const AuditReport report = AuditBundle("rule9/inject.json");
  const DeliveryReport& d = DeliveryById(report, "KV-7");
  EXPECT_EQ(d.transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(d, "source buffers may be reused"));
  EXPECT_TRUE(SaysSomewhere(d, "at most incomplete"));
  EXPECT_FALSE(report.questions.empty());
}

TEST(Rule9Inject, DeliveriesTransferredIsNotSupportedButRecordsStillCount) {
  const AuditReport report = AuditBundle("rule9/inject.json");
  EXPECT_EQ(report.successful, 2u);
  EXPECT_TRUE(Supported(report, "w1"));
  EXPECT_FALSE(Supported(report, "t1"));
}

TEST(Rule9Inject, TheSameRecordsAtTransmitEstablishTransport) {
  const AuditReport report = AuditBundle("rule9/transmit.json");
  EXPECT_EQ(DeliveryById(report, "KV-7").transport, TransportState::kEstablished);
  EXPECT_TRUE(Supported(report, "t1"));
}

}  // namespace
}  // namespace writ::audit::testing
