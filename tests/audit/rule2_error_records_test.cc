// Rule 2: on an error record only wr_id, status, qp_num and vendor_err are
// read; byte_len, opcode and the rest are ignored whatever they hold.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule2ErrorRecords, PlausibleByteLenOnAnErrorRecordIsNotRead) {
  const EvidenceBundle bundle = LoadBundle("rule2/error-plausible-byte-len.json");
  ASSERT_EQ(bundle.work_completions.size(), 3u);
  const WorkCompletion& error = bundle.work_completions[2];
  EXPECT_FALSE(error.success());
  // Structural: the parsed error record keeps nothing but the four defined fields.
  EXPECT_FALSE(error.success_detail.has_value());
  EXPECT_EQ(error.wr_id, "3");
  EXPECT_EQ(error.qp_num, 7u);
  EXPECT_EQ(error.vendor_err, 244);
  ASSERT_TRUE(bundle.work_completions[0].success_detail.has_value());
  EXPECT_EQ(bundle.work_completions[0].success_detail->byte_len, 8388608u);

  const AuditReport report = Audit(bundle);
  EXPECT_EQ(report.records, 3u);
  EXPECT_EQ(report.successful, 2u);
  EXPECT_EQ(report.failed, 1u);
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.transport, TransportState::kFailed);
  EXPECT_TRUE(SaysSomewhere(d, "IBV_WC_WR_FLUSH_ERR"));
  EXPECT_TRUE(SaysSomewhere(d, "nothing else of an error record is read"));
  EXPECT_FALSE(Supported(report, "c1"));  // 3 writes claimed, 2 success records
  EXPECT_FALSE(Supported(report, "c2"));
  // Placement is stipulated, so the bytes count as placed; the error's byte_len adds nothing.
  EXPECT_EQ(report.placed_bytes, 25165824u);
}

TEST(Rule2ErrorRecords, UndefinedFieldsOfAnErrorRecordMayHoldAnything) {
  auto bundle = ParseBundle(ReadText(BundlePath("rule2/error-undefined-fields.json")));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  EXPECT_FALSE(bundle->work_completions[0].success_detail.has_value());
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(DeliveryById(report, "D-1").transport, TransportState::kFailed);
  EXPECT_EQ(ReportToJson(report).find("deadbeef"), std::string::npos);
}

TEST(Rule2ErrorRecords, TheSameFieldsAreCheckedOnASuccessRecord) {
  auto bundle = ParseBundle(ReadText(BundlePath("malformed/success-byte-len-string.json")));
  ASSERT_FALSE(bundle.ok());
  // Record 0 is an error with byte_len "x" (not read); record 1 is a success with byte_len "8".
  EXPECT_EQ(bundle.status().message(), "work_completions[1].byte_len: expected integer");
}

}  // namespace
}  // namespace writ::audit::testing
