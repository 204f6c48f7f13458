// replicated:K certificates: K signed retained receipts for one delivery from K distinct
// keys in K distinct signed failure domains; every forgery named in issue 27 is refused.
#include "receipt/certificate.h"

#include <gtest/gtest.h>

#include "receipt/identity.h"
#include "receipt/signing.h"
#include "sample_receipt.h"

namespace writ::receipt {
namespace {

Receipt SignedRetained(const Identity& id, const std::string& delivery, const std::string& domain) {
  Receipt r = SampleReceipt(ReceiptRung::kValidated, delivery);
  r.rung = ReceiptRung::kRetained;
  r.rule_passed.reset();
  r.observer = "receiver store";
  r.statement = "retained";
  r.does_not_establish = "more";
  r.retention = RetentionPromise{"power-loss", "fsync", "power-loss", "intact", "fsync ok"};
  r.failure_domain = domain;
  EXPECT_TRUE(SignReceipt(r, id).ok());
  return r;
}

class CertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) ids_.push_back(std::move(Identity::Generate()).value());
  }
  ReplicatedCertificate Good() {
    return MakeCertificate(
        {SignedRetained(ids_[0], "D", "rack-a"), SignedRetained(ids_[1], "D", "rack-b")});
  }
  // Through the JSON form, as `writ verify` reads it.
  Status Check(const ReplicatedCertificate& c, const std::vector<std::string>& keys = {}) {
    auto parsed = CertificateFromJson(CertificateToJson(c));
    if (!parsed.ok()) return parsed.status();
    return VerifyCertificate(*parsed, keys);
  }
  std::vector<Identity> ids_;
};

TEST_F(CertificateTest, TwoMembersInTwoDomainsVerify) {
  ReplicatedCertificate c = Good();
  EXPECT_EQ(c.k, 2u);
  EXPECT_TRUE(Check(c).ok()) << Check(c).ToString();
  EXPECT_NE(CertificateToJson(c).find("\"retention\":\"replicated:2\""), std::string::npos);
  EXPECT_NE(c.survives.find("any 1 of these receivers"), std::string::npos);
}

TEST_F(CertificateTest, ExpectedKeysArePinned) {
  ReplicatedCertificate c = Good();
  const std::string k0 = PublicKeyHex(ids_[0].public_key());
  const std::string k1 = PublicKeyHex(ids_[1].public_key());
  const std::string k2 = PublicKeyHex(ids_[2].public_key());
  EXPECT_TRUE(Check(c, {k0, k1}).ok());
  Status s = Check(c, {k0, k2});
  EXPECT_EQ(s.code(), ErrorCode::kValidation);
  EXPECT_NE(s.message().find("not one of the expected keys"), std::string::npos) << s.message();
}

TEST_F(CertificateTest, MemberSwappedForAnUnsignedEditIsRefused) {
  ReplicatedCertificate c = Good();
  c.members[1].issuer = "writ-serve@10.0.0.9:7233";  // a swapped-in member, not as signed
  EXPECT_EQ(Check(c).code(), ErrorCode::kValidation);
}

TEST_F(CertificateTest, MemberFromAnotherDeliveryIsRefused) {
  ReplicatedCertificate c = Good();
  c.members[1] = SignedRetained(ids_[1], "OTHER", "rack-b");
  Status s = Check(c);
  EXPECT_EQ(s.code(), ErrorCode::kValidation);
  EXPECT_NE(s.message().find("another delivery"), std::string::npos) << s.message();
}

TEST_F(CertificateTest, DuplicatedKeyIsRefused) {
  ReplicatedCertificate c = MakeCertificate(
      {SignedRetained(ids_[0], "D", "rack-a"), SignedRetained(ids_[0], "D", "rack-b")});
  Status s = Check(c);
  EXPECT_EQ(s.code(), ErrorCode::kValidation);
  EXPECT_NE(s.message().find("already counted"), std::string::npos) << s.message();
}

TEST_F(CertificateTest, SameDomainTwiceIsRefused) {
  ReplicatedCertificate c = MakeCertificate(
      {SignedRetained(ids_[0], "D", "rack-a"), SignedRetained(ids_[1], "D", "rack-a")});
  Status s = Check(c);
  EXPECT_EQ(s.code(), ErrorCode::kValidation);
  EXPECT_NE(s.message().find("failure domain 'rack-a' already counted"), std::string::npos)
      << s.message();
}

TEST_F(CertificateTest, RelabelledDomainBreaksTheSignature) {
  ReplicatedCertificate c = MakeCertificate(
      {SignedRetained(ids_[0], "D", "rack-a"), SignedRetained(ids_[1], "D", "rack-a")});
  c.members[1].failure_domain = "rack-b";  // the sender relabels: the signature no longer fits
  Status s = Check(c);
  EXPECT_EQ(s.code(), ErrorCode::kValidation);
  EXPECT_NE(s.message().find("members[1]"), std::string::npos) << s.message();
}

TEST_F(CertificateTest, FewerMembersThanKIsRefused) {
  ReplicatedCertificate c = Good();
  c.members.pop_back();
  Status s = Check(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("needs 2 member receipts, it carries 1"), std::string::npos)
      << s.message();
}

TEST_F(CertificateTest, MemberWithoutASignedDomainIsRefused) {
  Receipt r = SignedRetained(ids_[1], "D", "x");
  r.failure_domain.reset();
  ASSERT_TRUE(SignReceipt(r, ids_[1]).ok());
  ReplicatedCertificate c = MakeCertificate({SignedRetained(ids_[0], "D", "rack-a"), r});
  Status s = Check(c);
  EXPECT_NE(s.message().find("signs no failure domain"), std::string::npos) << s.message();
}

TEST_F(CertificateTest, ParsesReplicatedRetention) {
  EXPECT_EQ(*ParseReplicatedRetention("replicated:3"), 3u);
  EXPECT_FALSE(ParseReplicatedRetention("replicated:0").ok());
  EXPECT_FALSE(ParseReplicatedRetention("replicated:").ok());
  EXPECT_FALSE(ParseReplicatedRetention("replicated:x").ok());
  EXPECT_FALSE(ParseReplicatedRetention("power-loss").ok());
}

TEST(ReceiptFailureDomain, IsSignedAndRoundTrips) {
  auto id = Identity::Generate();
  ASSERT_TRUE(id.ok());
  Receipt r = SignedRetained(*id, "D", "zone-1");
  const std::string json = ReceiptToJson(r);
  EXPECT_NE(json.find("\"failure_domain\":\"zone-1\""), std::string::npos);
  auto back = ReceiptFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back->failure_domain, "zone-1");
  EXPECT_TRUE(VerifyReceipt(*back).ok());
  Receipt plain = SampleReceipt(ReceiptRung::kValidated, "D");
  EXPECT_EQ(ReceiptToJson(plain).find("failure_domain"), std::string::npos);
}

}  // namespace
}  // namespace writ::receipt
