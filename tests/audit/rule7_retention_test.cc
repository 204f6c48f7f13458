// Rule 7: a retention promise counts only when all five fields are stated;
// otherwise incomplete_promise. Validation never implies retention.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule7Retention, ACompletePromiseGivesItsClass) {
  const AuditReport report = AuditBundle("rule7/complete.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.retention.ToString(), "power-loss");
  EXPECT_TRUE(Supported(report, "d1"));
}

TEST(Rule7Retention, ValidationNeverImpliesRetention) {
  const AuditReport report = AuditBundle("rule7/validated-no-promise.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.validation, ValidationState::kEstablished);
  EXPECT_EQ(d.retention.ToString(), "none_promised");
  EXPECT_TRUE(SaysSomewhere(d, "validation never implies retention"));
  EXPECT_FALSE(Supported(report, "d1"));
}

TEST(Rule7Retention, APromiseWithOneFieldMissingIsIncomplete) {
  const AuditReport report = AuditBundle("rule7/one-field-missing.json");
  const std::pair<const char*, const char*> cases[] = {
      {"RC-233", "does not state acknowledged_point"},
      {"D-2", "does not state survives"},
      {"D-3", "does not state promise_after_failure"},  // absent
      {"D-4", "does not state evidence"},               // ""
  };
  for (const auto& [id, says] : cases) {
    const DeliveryReport& d = DeliveryById(report, id);
    EXPECT_EQ(d.retention.ToString(), "incomplete_promise") << id;
    EXPECT_TRUE(SaysSomewhere(d, says)) << id;
    EXPECT_FALSE(d.questions.empty()) << id;
  }
  EXPECT_FALSE(Supported(report, "d1"));
  EXPECT_FALSE(Supported(report, "d2"));
}

TEST(Rule7Retention, APromiseNamingNoDeliveryIsIncomplete) {
  const AuditReport report = AuditBundle("rule7/promise-names-no-delivery.json");
  const DeliveryReport& d = DeliveryById(report, "RC-233");
  EXPECT_EQ(d.retention.ToString(), "incomplete_promise");
  EXPECT_TRUE(SaysSomewhere(d, "does not state delivery"));
  EXPECT_FALSE(Supported(report, "d1"));
}

TEST(Rule7Retention, TheStrongestCompletePromiseCounts) {
  // process-running, power-loss and process-restart are complete; replicated:3 lacks its point.
  const AuditReport report = AuditBundle("rule7/strongest.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").retention.ToString(), "power-loss");
}

TEST(Rule7Retention, AnIncompleteStrongerPromiseDoesNotOutrankAComplete) {
  const AuditReport report = AuditBundle("rule7/complete-beats-incomplete.json");
  EXPECT_EQ(DeliveryById(report, "RC-233").retention.ToString(), "process-restart");
  EXPECT_TRUE(Supported(report, "d1"));
}

TEST(Rule7Retention, SurvivesOrdersAsTheContractSays) {
  const auto running = *Survives::Parse("process-running");
  const auto restart = *Survives::Parse("process-restart");
  const auto power = *Survives::Parse("power-loss");
  const auto one = *Survives::Parse("replicated:1");
  const auto three = *Survives::Parse("replicated:3");
  EXPECT_LT(running, restart);
  EXPECT_LT(restart, power);
  EXPECT_LT(power, one);
  EXPECT_LT(one, three);
  EXPECT_EQ(three.ToString(), "replicated:3");
  for (const char* bad :
       {"replicated:0", "replicated:", "replicated:01", "replicated:-1", "replicated:+2",
        "replicated:2x", "replicated:99999999999999999999", "Power-loss", "volatile", ""})
    EXPECT_FALSE(Survives::Parse(bad).has_value()) << bad;
}

}  // namespace
}  // namespace writ::audit::testing
