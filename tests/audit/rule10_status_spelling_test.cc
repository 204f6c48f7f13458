// Rule 10: a record is a success only when its status is exactly "success".
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule10StatusSpelling, OnlyTheExactWordIsASuccess) {
  const AuditReport report = AuditBundle("rule10/status-spellings.json");
  EXPECT_EQ(report.records, 4u);
  EXPECT_EQ(report.successful, 1u);
  EXPECT_EQ(report.failed, 3u);
  for (const char* id : {"D-1", "D-2", "D-3"})
    EXPECT_EQ(DeliveryById(report, id).transport, TransportState::kFailed) << id;
  EXPECT_EQ(DeliveryById(report, "D-4").transport, TransportState::kEstablished);
  EXPECT_FALSE(Supported(report, "w1"));
  EXPECT_TRUE(Supported(report, "w2"));
}

TEST(Rule10StatusSpelling, TheReasonNamesTheStatusAsWritten) {
  const AuditReport report = AuditBundle("rule10/status-spellings.json");
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "D-1"), "status \"IBV_WC_SUCCESS\", qp_num 9"));
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "D-2"), "status \"\""));
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "D-3"), "status \"Success\""));
}

}  // namespace
}  // namespace writ::audit::testing
