// R3-7 (docs/audit.md): replicated:K claims drawn from the members of the bundle's
// certificate, as a signature-checking layer found them (the CLI's part, with a real
// replicated send, is tests/cluster/replicated_evidence_test.cc).
#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

// Delivery "R" of 4096 bytes promised replicated:2, with the two claims that need it.
constexpr const char* kReplicatedBundle = R"({"schema":"writ.evidence/1",
  "deliveries":[{"id":"R","bytes":4096,"portions":[]}],
  "retention_promises":[{"delivery":"R","acknowledged_point":"2 retained receipts",
                         "survives":"replicated:2","promise_after_failure":"readable",
                         "evidence":"the certificate","medium":"replicas"}],
  "claims":[{"id":"c1","kind":"durable","delivery":"R","survives":"replicated:2"},
            {"id":"c2","kind":"copies","delivery":"R","count":2},
            {"id":"c3","kind":"durable","delivery":"R","survives":"power-loss"}]})";

ReceiptCheck Member(size_t i, std::string key, std::string domain) {
  ReceiptCheck m;
  m.where = "certificate.members[" + std::to_string(i) + "]";
  m.state = ReceiptCheck::State::kVerified;
  m.key_id = std::move(key);
  m.rung = "retained";
  m.delivery = "R";
  m.bytes = 4096;
  m.survives = Survives::Parse("power-loss");
  m.rule = "xxh3-128";
  m.digest = "d1";
  m.failure_domain = std::move(domain);
  return m;
}

CertificateCheck Certificate(std::vector<ReceiptCheck> members) {
  CertificateCheck c;
  c.k = 2;
  c.delivery = "R";
  c.bytes = 4096;
  c.rule = "xxh3-128";
  c.digest = "d1";
  c.members = std::move(members);
  return c;
}

AuditReport AuditReplicated(const std::vector<ReceiptCheck>& receipts,
                            const std::optional<CertificateCheck>& certificate) {
  auto bundle = ParseBundle(kReplicatedBundle);
  EXPECT_TRUE(bundle.ok()) << bundle.status().ToString();
  AuditReport report = Audit(*bundle);
  for (const ClaimVerdict& c : report.claims)
    EXPECT_EQ(c.verdict, Verdict::kSupported) << c.id << " before revision 3: " << c.reason;
  ApplyReceiptChecks(report, receipts, false, certificate);
  return report;
}

bool ReplicatedSays(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

// Both replicated claims are refused, naming `why`, and asking for the receipts.
void ExpectRefused(const AuditReport& report, const std::string& why) {
  for (const char* id : {"c1", "c2"}) {
    const ClaimVerdict& c = ClaimById(report, id);
    EXPECT_EQ(c.verdict, Verdict::kNotSupported) << id << ": " << c.reason;
    EXPECT_TRUE(ReplicatedSays(c.reason, why)) << id << ": " << c.reason;
    EXPECT_TRUE(ReplicatedSays(c.question, "2 receivers in distinct failure domains"))
        << c.question;
    EXPECT_TRUE(c.signed_by.empty());
  }
}

TEST(Revision3Replicated, KVerifiedMembersInDistinctDomainsSupportTheClaimsAndSayWhatIsNot) {
  const AuditReport report =
      AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), Member(1, "k2", "rack-b")}));
  for (const char* id : {"c1", "c2"}) {
    const ClaimVerdict& c = ClaimById(report, id);
    EXPECT_EQ(c.verdict, Verdict::kSupported) << id << ": " << c.reason;
    EXPECT_EQ(c.signed_by, (std::vector<std::string>{"k1", "k2"}));
    EXPECT_TRUE(ReplicatedSays(c.reason, "survives the loss of any 1 of those receivers"))
        << c.reason;
    EXPECT_TRUE(ReplicatedSays(c.reason, "Not established: that failures inside one domain"))
        << c.reason;
    EXPECT_TRUE(ReplicatedSays(c.reason, "that no receiver lied")) << c.reason;
  }
  const std::string json = ReportToJson(report);
  EXPECT_TRUE(ReplicatedSays(json, "\"failure_domain\": \"rack-b\"")) << json;
}

TEST(Revision3Replicated, AMemberRemovedLeavesFewerThanK) {
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a")})),
                "Only 1 of the certificate's 1 members count toward replicated:2");
}

TEST(Revision3Replicated, ADuplicatedKeyIsCountedOnce) {
  ExpectRefused(
      AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), Member(1, "k1", "rack-b")})),
      "certificate.members[1] key k1 already counted (certificate.members[0])");
}

TEST(Revision3Replicated, TwoMembersInOneDomainAreCountedOnce) {
  ExpectRefused(
      AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), Member(1, "k2", "rack-a")})),
      "failure domain \"rack-a\" already counted");
}

TEST(Revision3Replicated, ARelabelledDomainBreaksTheMembersSignature) {
  ReceiptCheck relabelled = Member(1, "", "rack-z");
  relabelled.state = ReceiptCheck::State::kInvalid;
  relabelled.problem = "signature: does not verify";
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), relabelled})),
                "certificate.members[1] does not verify: signature: does not verify");
}

TEST(Revision3Replicated, AMemberOfAnotherDeliveryIsNotCounted) {
  ReceiptCheck other_id = Member(1, "k2", "rack-b");
  other_id.delivery = "S";
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), other_id})),
                "names delivery \"S\", not \"R\"");
  ReceiptCheck other_bytes = Member(1, "k2", "rack-b");
  other_bytes.digest = "d2";
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), other_bytes})),
                "a receipt of another delivery");
}

TEST(Revision3Replicated, UnsignedUnpinnedOrDomainlessMembersDoNotCount) {
  ReceiptCheck unpinned = Member(1, "", "rack-b");
  unpinned.state = ReceiptCheck::State::kUnpinned;
  unpinned.problem = "signed by key k9, which is not pinned";
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), unpinned})),
                "which is not pinned");
  ReceiptCheck no_domain = Member(1, "k2", "rack-b");
  no_domain.failure_domain.reset();
  ExpectRefused(AuditReplicated({}, Certificate({Member(0, "k1", "rack-a"), no_domain})),
                "signs no failure domain");
}

TEST(Revision3Replicated, ReceiptsWithoutACertificateShowNoCopiesButNoEvidenceStaysStated) {
  ReceiptCheck retained = Member(0, "k1", "rack-a");
  retained.where = "receipts[0]";
  ExpectRefused(AuditReplicated({retained}, std::nullopt), "no replicated certificate");
  // Another supplier's bundle with no signed evidence at all: stated, not signed (R3-4).
  const AuditReport unsigned_bundle = AuditReplicated({}, std::nullopt);
  EXPECT_EQ(ClaimById(unsigned_bundle, "c1").verdict, Verdict::kSupported);
  EXPECT_TRUE(ClaimById(unsigned_bundle, "c1").signed_by.empty());
}

TEST(Revision3Replicated, AnUnreadableCertificateSupportsNothingReplicated) {
  CertificateCheck broken;
  broken.problem = "members: expected array";
  ExpectRefused(AuditReplicated({}, broken), "cannot be read: members: expected array");
}

}  // namespace
}  // namespace writ::audit::testing
