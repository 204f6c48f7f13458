// Rule 8: claims are supported only when the established facts imply them.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule8Claims, WorkRequestsSucceededNeedsExactlyThatManySuccessRecords) {
  const AuditReport report = AuditBundle("rule8/work-requests-exact.json");
  EXPECT_TRUE(Supported(report, "exact"));
  EXPECT_FALSE(Supported(report, "records"));  // 4 records, one an error
  EXPECT_FALSE(Supported(report, "fewer"));
  EXPECT_NE(ClaimById(report, "records").question.find("Which 4 work requests succeeded"),
            std::string::npos);
}

TEST(Rule8Claims, JobsNeedProcessedDeliveriesAndTransfersNeedEstablishedTransport) {
  const AuditReport report = AuditBundle("rule8/jobs-and-transfers.json");
  EXPECT_TRUE(Supported(report, "jobs2"));
  EXPECT_FALSE(Supported(report, "jobs3"));  // C was validated, not processed
  EXPECT_TRUE(Supported(report, "jobs1"));   // at least n
  EXPECT_TRUE(Supported(report, "moved2"));
  EXPECT_FALSE(Supported(report, "moved3"));  // C's write failed
  EXPECT_NE(ClaimById(report, "jobs3").reason.find("are not jobs"), std::string::npos);
}

TEST(Rule8Claims, DurableAndCopiesFollowTheRetentionOrder) {
  const AuditReport report = AuditBundle("rule8/retention-claims.json");
  EXPECT_FALSE(Supported(report, "durable-running"));  // below process-restart
  EXPECT_TRUE(Supported(report, "durable-restart"));
  EXPECT_FALSE(Supported(report, "durable-restart-power"));
  EXPECT_TRUE(Supported(report, "durable-power-power"));
  EXPECT_TRUE(Supported(report, "durable-replicated-power"));
  EXPECT_FALSE(Supported(report, "durable-replicated-3"));
  EXPECT_TRUE(Supported(report, "copies-2"));
  EXPECT_FALSE(Supported(report, "copies-3"));
  EXPECT_FALSE(Supported(report, "copies-power"));  // power-loss is one copy, not replicated:K
  EXPECT_EQ(ClaimById(report, "durable-running").question,
            "Which failure does this acknowledgement survive, and what do you promise afterwards?");
}

TEST(Rule8Claims, DeliveryFactClaimsFollowTheEstablishedFacts) {
  const AuditReport report = AuditBundle("rule8/delivery-claims.json");
  for (const char* id : {"placed-full", "notified-full", "validated-full", "processed-full"})
    EXPECT_TRUE(Supported(report, id)) << id;
  for (const char* id : {"placed-bare", "notified-bare", "validated-bare", "processed-bare"})
    EXPECT_FALSE(Supported(report, id)) << id;
}

TEST(Rule8Claims, AClaimAboutAnUnknownDeliveryOrOfAnUnknownKindIsNotSupported) {
  const AuditReport report = AuditBundle("rule8/delivery-claims.json");
  const ClaimVerdict& unknown_delivery = ClaimById(report, "unknown-delivery");
  EXPECT_EQ(unknown_delivery.verdict, Verdict::kNotSupported);
  EXPECT_NE(unknown_delivery.reason.find("\"RC-999\", which is not in the bundle"),
            std::string::npos);
  const ClaimVerdict& unknown_kind = ClaimById(report, "unknown-kind");
  EXPECT_EQ(unknown_kind.verdict, Verdict::kNotSupported);
  EXPECT_NE(unknown_kind.reason.find("carbon_neutral"), std::string::npos);
}

TEST(Rule8Claims, EveryVerdictHasAReasonAndEveryRefusalAQuestion) {
  for (const char* name : {"rule8/work-requests-exact.json", "rule8/jobs-and-transfers.json",
                           "rule8/retention-claims.json", "rule8/delivery-claims.json"}) {
    const AuditReport report = AuditBundle(name);
    for (const ClaimVerdict& c : report.claims) {
      EXPECT_FALSE(c.reason.empty()) << name << " " << c.id;
      if (c.verdict == Verdict::kNotSupported) {
        EXPECT_FALSE(c.question.empty()) << name << " " << c.id;
      }
    }
  }
}

}  // namespace
}  // namespace writ::audit::testing
