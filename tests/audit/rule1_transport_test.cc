// Rule 1: transport is established only when every portion's wr_id has a
// record and every such record is success; failed on any error; otherwise
// incomplete. The number of records never stands in for this.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule1Transport, EveryPortionSucceededIsEstablished) {
  const AuditReport report = AuditBundle("rule1/established.json");
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.transport, TransportState::kEstablished);
  EXPECT_TRUE(SaysSomewhere(d, "at completion level transmit"));
  EXPECT_TRUE(Supported(report, "t1"));
}

TEST(Rule1Transport, MissingRecordIsIncomplete) {
  const AuditReport report = AuditBundle("rule1/missing-record.json");
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(d, "No success record for work request 3"));
  EXPECT_FALSE(Supported(report, "t1"));
}

TEST(Rule1Transport, RecordCountDoesNotStandInForCoverage) {
  // Three portions, three success records, but one record is for another work request.
  const AuditReport report = AuditBundle("rule1/count-is-not-coverage.json");
  EXPECT_EQ(report.records, 3u);
  EXPECT_EQ(report.successful, 3u);
  EXPECT_EQ(DeliveryById(report, "D-1").transport, TransportState::kIncomplete);
  EXPECT_TRUE(Supported(report, "t1"));   // three success records: true
  EXPECT_FALSE(Supported(report, "t2"));  // but the delivery was not shown transferred
}

TEST(Rule1Transport, AnErrorRecordFailsTheDelivery) {
  const AuditReport report = AuditBundle("rule1/error-record.json");
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.transport, TransportState::kFailed);
  EXPECT_EQ(report.successful, 2u);
  EXPECT_EQ(report.failed, 1u);
  EXPECT_TRUE(SaysSomewhere(d, "IBV_WC_REM_ACCESS_ERR"));
  EXPECT_TRUE(SaysSomewhere(d, "vendor_err 136"));
  EXPECT_FALSE(d.questions.empty());
}

TEST(Rule1Transport, AnErrorRecordForTheSameRequestOutweighsASuccess) {
  const AuditReport report = AuditBundle("rule1/success-and-error-same-request.json");
  EXPECT_EQ(DeliveryById(report, "D-1").transport, TransportState::kFailed);
}

TEST(Rule1Transport, NoPortionsIsIncompleteNotVacuouslyEstablished) {
  const AuditReport report = AuditBundle("rule1/no-portions.json");
  const DeliveryReport& d = DeliveryById(report, "D-1");
  EXPECT_EQ(d.transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(d, "names no portions"));
}

TEST(Rule1Transport, PortionsThatDoNotCoverTheDeliveryAreIncomplete) {
  const AuditReport report = AuditBundle("rule1/partial-coverage.json");
  const DeliveryReport& by_offset = DeliveryById(report, "D-1");
  EXPECT_EQ(by_offset.transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(by_offset, "cover 16,777,216 of its 25,165,824 bytes"));
  const DeliveryReport& by_sum = DeliveryById(report, "D-2");
  EXPECT_EQ(by_sum.transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(by_sum, "cover 4,096 of its 8,192 bytes"));
}

TEST(Rule1Transport, OneRecordCannotAttestTwoPortions) {
  const AuditReport report = AuditBundle("rule1/shared-request.json");
  EXPECT_EQ(DeliveryById(report, "D-1").transport, TransportState::kIncomplete);
  EXPECT_EQ(DeliveryById(report, "D-2").transport, TransportState::kIncomplete);
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "D-1"), "carries more than one portion"));
}

TEST(Rule1Transport, IntegerRequestIdsMatchTheirDecimalStrings) {
  const AuditReport report = AuditBundle("rule1/integer-request-ids.json");
  EXPECT_EQ(DeliveryById(report, "D-1").transport, TransportState::kEstablished);
}

}  // namespace
}  // namespace writ::audit::testing
