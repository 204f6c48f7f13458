// The canonical RC-233 example (examples/audit/) and its expected report.
#include <nlohmann/json.hpp>

#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

std::string ExamplePath(const std::string& name) {
  return std::string(WRIT_AUDIT_EXAMPLES) + "/" + name;
}

TEST(CanonicalExample, GivesTheFiguresOfTheIssue) {
  auto bundle = ParseBundle(ReadText(ExamplePath("rc-233.evidence.json")));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(report.records, 3u);
  EXPECT_EQ(report.successful, 3u);
  EXPECT_EQ(report.failed, 0u);
  EXPECT_EQ(report.logical_deliveries, 1u);
  EXPECT_EQ(report.placed_bytes, 25165824u);
  ASSERT_EQ(report.deliveries.size(), 1u);
  const DeliveryReport& d = report.deliveries[0];
  EXPECT_EQ(d.transport, TransportState::kEstablished);
  EXPECT_EQ(d.placement, PlacementState::kStipulated);
  EXPECT_EQ(d.notification, NotificationState::kNone);
  EXPECT_EQ(d.validation, ValidationState::kUnknown);
  EXPECT_EQ(d.processing, ProcessingState::kUnknown);
  EXPECT_EQ(d.retention.ToString(), "none_promised");
  EXPECT_TRUE(Supported(report, "c1"));
  EXPECT_FALSE(Supported(report, "c2"));
  EXPECT_FALSE(Supported(report, "c3"));
  EXPECT_EQ(report.missing_context,
            (std::vector<std::string>{"device", "software_release", "completion_level"}));
}

TEST(CanonicalExample, MatchesTheShippedExpectedReport) {
  auto bundle = ParseBundle(ReadText(ExamplePath("rc-233.evidence.json")));
  ASSERT_TRUE(bundle.ok());
  EXPECT_EQ(ReportToJson(Audit(*bundle)), ReadText(ExamplePath("rc-233.audit.json")));
}

TEST(CanonicalExample, TheShippedBundleIsTheContractsExample) {
  const auto shipped = nlohmann::json::parse(ReadText(ExamplePath("rc-233.evidence.json")));
  EXPECT_EQ(shipped["schema"], "writ.evidence/1");
  EXPECT_EQ(shipped["deliveries"][0]["id"], "RC-233");
  EXPECT_EQ(shipped["claims"].size(), 3u);
}

// writ's own RC-233 evidence, as `writ send --evidence` wrote it on loopback (tcp).
TEST(OwnRc233Example, LeavesNoQuestionAndMatchesItsShippedReport) {
  auto bundle = ParseBundle(ReadText(ExamplePath("writ-rc-233.evidence.json")));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(report.questions, std::vector<std::string>{});
  for (const ClaimVerdict& c : report.claims) EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id;
  EXPECT_EQ(ReportToJson(report), ReadText(ExamplePath("writ-rc-233.audit.json")));
}

}  // namespace
}  // namespace writ::audit::testing
