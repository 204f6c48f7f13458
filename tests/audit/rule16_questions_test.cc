// Rule 16: every question, once, in input order, in the JSON report and under "Ask next".
#include <nlohmann/json.hpp>

#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule16Questions, EachVerdictThatAsksAddsOneQuestionInInputOrder) {
  const AuditReport report = AuditBundle("rule16/questions.json");
  ASSERT_EQ(report.questions.size(), 4u) << ::testing::PrintToString(report.questions);
  EXPECT_NE(report.questions[0].find("the rest of delivery \"Q-1\""), std::string::npos);
  EXPECT_NE(report.questions[1].find("acknowledgements about \"Q-1\""), std::string::npos);
  EXPECT_NE(report.questions[2].find("retention_promises[0] does not state"), std::string::npos);
  EXPECT_NE(report.questions[3].find("jobs"), std::string::npos);  // j1 and j2 ask it once
}

TEST(Rule16Questions, TheJsonReportCarriesThem) {
  const AuditReport report = AuditBundle("rule16/questions.json");
  const auto doc = nlohmann::json::parse(ReportToJson(report));
  EXPECT_EQ(doc["questions"].get<std::vector<std::string>>(), report.questions);
}

TEST(Rule16Questions, TheHumanReportPrintsTheSameTextUnderAskNext) {
  const AuditReport report = AuditBundle("rule16/questions.json");
  const std::string text = ReportToText(report);
  const auto at = text.find("Ask next\n");
  ASSERT_NE(at, std::string::npos);
  std::string expected = "Ask next\n";
  for (const std::string& q : report.questions) expected += "  - " + q + "\n";
  EXPECT_EQ(text.substr(at, expected.size()), expected);
}

TEST(Rule16Questions, NothingToAskIsAnEmptyList) {
  const AuditReport report = AuditBundle("rule13/volatile.json");
  const AuditReport clean = AuditBundle("rule9/transmit.json");
  EXPECT_FALSE(report.questions.empty());
  const auto doc = nlohmann::json::parse(ReportToJson(clean));
  ASSERT_TRUE(doc.contains("questions"));
  EXPECT_EQ(doc["questions"].size(), clean.questions.size());
}

}  // namespace
}  // namespace writ::audit::testing
