// 100,000 work completions: the audit must stay linear (the benchmark,
// bench/audit_bench.cc, measures the time; this checks the answer).
#include "audit_test_util.h"
#include "synthetic_bundle.h"

namespace writ::audit::testing {
namespace {

TEST(Scale, HundredThousandCompletionsAreAuditedCorrectly) {
  auto bundle = ParseBundle(SyntheticBundle(1000, 100));
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(report.records, 100000u);
  EXPECT_EQ(report.successful, 100000u);
  EXPECT_EQ(report.logical_deliveries, 1000u);
  EXPECT_EQ(report.placed_bytes, uint64_t{1000} * 100 * 8388608);
  for (const DeliveryReport& d : report.deliveries) {
    ASSERT_EQ(d.transport, TransportState::kEstablished) << d.id;
    ASSERT_EQ(d.validation, ValidationState::kEstablished) << d.id;
    ASSERT_EQ(d.retention.ToString(), "power-loss") << d.id;
  }
  for (const ClaimVerdict& c : report.claims) EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id;
}

TEST(Scale, ManyUnattributedAcknowledgementsDoNotMultiplyTheReasons) {
  // 20,000 deliveries and 20,000 acknowledgements naming none: one sentence each, not 20,000.
  std::string text = R"({"schema":"writ.evidence/1","deliveries":[)";
  for (int i = 0; i < 20000; ++i)
    text += (i ? "," : "") + std::string(R"({"id":"D)") + std::to_string(i) +
            R"(","bytes":1,"portions":[]})";
  text += R"(],"acknowledgements":[)";
  for (int i = 0; i < 20000; ++i) text += (i ? "," : "") + std::string(R"({"result":"validated"})");
  text += "]}";
  auto bundle = ParseBundle(text);
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  const AuditReport report = Audit(*bundle);
  EXPECT_EQ(report.deliveries[0].validation, ValidationState::kUnresolved);
  EXPECT_LT(report.deliveries[19999].reasons.size(), 10u);
}

}  // namespace
}  // namespace writ::audit::testing
