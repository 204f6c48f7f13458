// Rule 14: entries naming a delivery id the bundle does not have are listed, not dropped.
#include <nlohmann/json.hpp>

#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

using Kind = UnattributedEntry::Kind;

TEST(Rule14Unattributed, EveryEntryNamingAnUnknownIdIsListed) {
  const AuditReport report = AuditBundle("rule14/unattributed.json");
  ASSERT_EQ(report.unattributed.size(), 4u);
  EXPECT_EQ(report.unattributed[0].kind, Kind::kPlacement);
  EXPECT_EQ(report.unattributed[0].delivery, "CKPT-0008");
  EXPECT_EQ(report.unattributed[1].kind, Kind::kNotification);
  EXPECT_EQ(report.unattributed[1].delivery, "RC-233 ");  // ids are space-sensitive
  EXPECT_EQ(report.unattributed[2].kind, Kind::kAcknowledgement);
  EXPECT_EQ(report.unattributed[2].index, 1u);
  EXPECT_EQ(report.unattributed[2].delivery, "rc-233");  // and case-sensitive
  EXPECT_EQ(report.unattributed[3].kind, Kind::kRetentionPromise);
  EXPECT_EQ(report.unattributed[3].index, 0u);
}

TEST(Rule14Unattributed, TheyBearOnNoDeliveryOfTheBundle) {
  const AuditReport report = AuditBundle("rule14/unattributed.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.placement, PlacementState::kNotEstablished);
  EXPECT_EQ(d.notification, NotificationState::kNone);
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_EQ(d.retention.ToString(), "none_promised");
  EXPECT_TRUE(Supported(report, "c2"));
}

TEST(Rule14Unattributed, AClaimNamingSuchADeliveryIsNotSupportedAndSaysSo) {
  const AuditReport report = AuditBundle("rule14/unattributed.json");
  const ClaimVerdict& c = ClaimById(report, "c1");
  EXPECT_EQ(c.verdict, Verdict::kNotSupported);
  EXPECT_NE(c.reason.find("\"CKPT-0008\", which is not in the bundle"), std::string::npos);
}

TEST(Rule14Unattributed, TheJsonReportListsThem) {
  const auto doc = nlohmann::json::parse(ReportToJson(AuditBundle("rule14/unattributed.json")));
  ASSERT_EQ(doc["unattributed"].size(), 4u);
  EXPECT_EQ(doc["unattributed"][2],
            (nlohmann::json{{"kind", "acknowledgement"}, {"index", 1}, {"delivery", "rc-233"}}));
  EXPECT_EQ(doc["unattributed"][3]["kind"], "retention_promise");
}

}  // namespace
}  // namespace writ::audit::testing
