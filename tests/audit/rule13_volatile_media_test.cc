// Rule 13: volatile media cannot promise power loss.
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

TEST(Rule13VolatileMedia, DramOrGpuPromisingPowerLossIsIncomplete) {
  const AuditReport report = AuditBundle("rule13/volatile.json");
  for (const char* id : {"M-1", "M-2"}) {
    const DeliveryReport& d = DeliveryById(report, id);
    EXPECT_EQ(d.retention.ToString(), "incomplete_promise") << id;
    EXPECT_TRUE(SaysSomewhere(d, "loses its contents when power goes")) << id;
  }
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "M-1"), "power-loss on dram"));
  EXPECT_TRUE(SaysSomewhere(DeliveryById(report, "M-2"), "replicated:2 on gpu"));
  EXPECT_FALSE(Supported(report, "d1"));
}

TEST(Rule13VolatileMedia, WhatDramCanPromiseAndWhatDurableMediaPromiseCount) {
  const AuditReport report = AuditBundle("rule13/volatile.json");
  EXPECT_EQ(DeliveryById(report, "M-3").retention.ToString(), "process-restart");
  EXPECT_EQ(DeliveryById(report, "M-4").retention.ToString(), "power-loss");
  EXPECT_EQ(DeliveryById(report, "M-5").retention.ToString(), "power-loss");
  EXPECT_TRUE(Supported(report, "d4"));
}

TEST(Rule13VolatileMedia, NoMediumInAVolatileContextCountsAndAsks) {
  const AuditReport report = AuditBundle("rule13/no-medium-dram.json");
  EXPECT_EQ(DeliveryById(report, "N-1").retention.ToString(), "power-loss");
  ASSERT_EQ(report.questions.size(), 1u);
  EXPECT_EQ(report.questions[0],
            "Which medium holds delivery \"N-1\" at the acknowledged point of "
            "retention_promises[0]?");
}

TEST(Rule13VolatileMedia, TheMediumIsReadAndAnUnknownOneIsMalformed) {
  const EvidenceBundle bundle = LoadBundle("rule13/volatile.json");
  EXPECT_EQ(bundle.retention_promises[3].medium, Medium::kDisk);
  const auto bad = ParseBundle(
      R"({"schema":"writ.evidence/1","retention_promises":[{"delivery":"x","medium":"tape"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("retention_promises[0].medium: expected one of dram"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace writ::audit::testing
