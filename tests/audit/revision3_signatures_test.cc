// Revision 3 (docs/audit.md): claims judged against the receipts a bundle embeds, as a
// signature-checking layer found them (ApplyReceiptChecks; the CLI's part is tested in
// tests/hostile/signed_evidence_test.cc).
#include <nlohmann/json.hpp>

#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

// One delivery "D" of 4096 bytes with writ's own kinds of evidence and claims.
constexpr const char* kRevision3Bundle = R"({"schema":"writ.evidence/1",
  "context":{"operation":"rdma_write_with_imm","transport":"tcp","device":"lo",
             "memory_type":"dram","software_release":"writ","completion_level":"delivery"},
  "deliveries":[{"id":"D","bytes":4096,"portions":[{"wr_id":"1","offset":0,"bytes":4096}]}],
  "work_completions":[{"wr_id":"1","status":"success","opcode":"rdma_write","qp_num":1,
                       "vendor_err":0}],
  "placement":[{"delivery":"D","basis":"observed"}],
  "notifications":[{"delivery":"D","kind":"write_with_imm","portion":"1"}],
  "acknowledgements":[{"label":"validated","delivery":"D","bytes":4096,"result":"validated",
                       "rule":"xxh3-128"}],
  "retention_promises":[{"delivery":"D","acknowledged_point":"fsync","survives":"power-loss",
                         "promise_after_failure":"readable","evidence":"fsync ok",
                         "medium":"disk"}],
  "claims":[{"id":"c1","kind":"work_requests_succeeded","count":1},
            {"id":"c2","kind":"placed","delivery":"D"},
            {"id":"c3","kind":"validated","delivery":"D"},
            {"id":"c4","kind":"durable","delivery":"D","survives":"power-loss"},
            {"id":"c5","kind":"jobs_completed","count":0}]})";

ReceiptCheck SignedCheck(std::string rung, std::string delivery = "D", uint64_t bytes = 4096) {
  ReceiptCheck c;
  c.where = "receipts[0]";
  c.state = ReceiptCheck::State::kVerified;
  c.key_id = "k1";
  c.rung = std::move(rung);
  c.delivery = std::move(delivery);
  c.bytes = bytes;
  if (c.rung == "transport" || c.rung == "received") c.observed_chunks = 1;
  if (c.rung == "retained") c.survives = Survives::Parse("power-loss");
  return c;
}

std::vector<ReceiptCheck> AllSigned() {
  return {SignedCheck("transport"), SignedCheck("received"), SignedCheck("validated"),
          SignedCheck("retained")};
}

AuditReport AuditWith(const std::vector<ReceiptCheck>& checks, bool pinned = false) {
  auto bundle = ParseBundle(kRevision3Bundle);
  EXPECT_TRUE(bundle.ok()) << bundle.status().ToString();
  AuditReport report = Audit(*bundle);
  for (const ClaimVerdict& c : report.claims)
    EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id << " before revision 3: " << c.reason;
  ApplyReceiptChecks(report, checks, pinned);
  return report;
}

bool Has(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

TEST(Revision3, ABundleWithoutReceiptsSaysSoFirstAndSignsNothing) {
  const AuditReport report = AuditWith({});
  for (const ClaimVerdict& c : report.claims) {
    EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id;
    EXPECT_TRUE(c.signed_by.empty()) << c.id;
  }
  const std::string text = ReportToText(report);
  EXPECT_EQ(text.rfind("No signatures: nothing in this bundle is signed", 0), 0u) << text;
  EXPECT_TRUE(Has(text, "stated, not signed")) << text;
  const auto json = nlohmann::json::parse(ReportToJson(report));
  EXPECT_EQ(json["signatures"]["verified"], 0);
  EXPECT_EQ(json["claims"][0]["signed_by"], nlohmann::json::array());
}

TEST(Revision3, ClaimsDrawnFromVerifiedReceiptsAreSignedByTheirKey) {
  const AuditReport report = AuditWith(AllSigned(), /*pinned=*/true);
  for (const char* id : {"c1", "c2", "c3", "c4"}) {
    EXPECT_EQ(ClaimById(report, id).verdict, Verdict::kSupported) << id;
    EXPECT_EQ(ClaimById(report, id).signed_by, std::vector<std::string>{"k1"}) << id;
  }
  EXPECT_TRUE(ClaimById(report, "c5").signed_by.empty()) << "no receipt attests jobs";
  const std::string text = ReportToText(report);
  EXPECT_EQ(text.rfind("Signed: 4 of 4 embedded receipts verified", 0), 0u) << text;
  EXPECT_TRUE(Has(text, "(pinned)")) << text;
  EXPECT_TRUE(Has(text, "signed by key k1")) << text;
}

TEST(Revision3, ATamperedReceiptSupportsNothingAndItsClaimFails) {
  std::vector<ReceiptCheck> checks = AllSigned();
  checks[2].state = ReceiptCheck::State::kInvalid;
  checks[2].key_id.clear();
  checks[2].problem = "signature: does not match the receipt's contents";
  const AuditReport report = AuditWith(checks);
  const ClaimVerdict& validated = ClaimById(report, "c3");
  EXPECT_EQ(validated.verdict, Verdict::kNotSupported);
  EXPECT_TRUE(Has(validated.reason, "does not verify")) << validated.reason;
  EXPECT_FALSE(validated.question.empty());
  EXPECT_NE(std::find(report.questions.begin(), report.questions.end(), validated.question),
            report.questions.end());
  EXPECT_EQ(ClaimById(report, "c2").signed_by, std::vector<std::string>{"k1"});
  EXPECT_TRUE(Has(ReportToText(report), "does not verify: signature")) << ReportToText(report);
}

TEST(Revision3, AClaimWithNoReceiptIsStatedNotSigned) {
  const AuditReport report = AuditWith({SignedCheck("transport")});
  EXPECT_EQ(ClaimById(report, "c1").signed_by, std::vector<std::string>{"k1"});
  for (const char* id : {"c2", "c3", "c4"}) {
    EXPECT_EQ(ClaimById(report, id).verdict, Verdict::kSupported) << id;
    EXPECT_TRUE(ClaimById(report, id).signed_by.empty()) << id;
  }
}

TEST(Revision3, ReceiptsNamingAnotherDeliverySupportNothing) {
  std::vector<ReceiptCheck> checks;
  for (ReceiptCheck c : AllSigned()) {
    c.delivery = "OTHER";
    checks.push_back(c);
  }
  const AuditReport report = AuditWith(checks);
  ASSERT_TRUE(report.signatures);
  EXPECT_EQ(report.signatures->verified, 0u);
  for (const ClaimVerdict& c : report.claims) EXPECT_TRUE(c.signed_by.empty()) << c.id;
  const std::string text = ReportToText(report);
  EXPECT_EQ(text.rfind("No signatures:", 0), 0u) << text;
  EXPECT_TRUE(Has(text, "names no delivery of this bundle")) << text;
}

TEST(Revision3, AClaimContradictedByASignedReceiptIsUnsupported) {
  std::vector<ReceiptCheck> checks = AllSigned();
  checks[3].survives = Survives::Parse("process-running");  // a volatile delivery's receipt
  AuditReport report = AuditWith(checks);
  const ClaimVerdict& durable = ClaimById(report, "c4");
  EXPECT_EQ(durable.verdict, Verdict::kNotSupported);
  EXPECT_TRUE(Has(durable.reason, "promises only")) << durable.reason;

  checks = AllSigned();
  checks[1].bytes = 1;  // the signed received receipt is about another size
  report = AuditWith(checks);
  EXPECT_EQ(ClaimById(report, "c2").verdict, Verdict::kNotSupported);
  EXPECT_TRUE(Has(ClaimById(report, "c2").reason, "is 1 bytes; the bundle says 4096"))
      << ClaimById(report, "c2").reason;
}

TEST(Revision3, AnUnsignedReceiptIsAStatementOnly) {
  std::vector<ReceiptCheck> checks = AllSigned();
  checks[0].state = ReceiptCheck::State::kNotSigned;
  checks[0].key_id.clear();
  const AuditReport report = AuditWith(checks);
  EXPECT_EQ(ClaimById(report, "c1").verdict, Verdict::kSupported);
  EXPECT_TRUE(ClaimById(report, "c1").signed_by.empty());
  EXPECT_TRUE(Has(ReportToText(report), "not signed")) << ReportToText(report);
}

}  // namespace
}  // namespace writ::audit::testing
