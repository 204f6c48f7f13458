// Signed evidence (issue 28, docs/audit.md revision 3): `writ send --evidence` embeds its
// receipts; `writ audit` verifies them offline and says which claims a key signed, and a
// bundle edited after the fact (a tampered receipt, receipts of another delivery, a
// promise copied in) is judged by what was signed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, false);
}

CommandRun AuditJson(const TempDir& dir, const json& bundle, std::vector<std::string> extra = {}) {
  const std::string path = dir.File("edited.evidence.json");
  std::ofstream(path, std::ios::trunc) << bundle.dump(2);
  std::vector<std::string> args{"audit", path};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunWrit(args);
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

bool EvidenceSays(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

json& ReceiptOfRung(json& bundle, const std::string& rung) {
  for (json& r : bundle["receipts"])
    if (r["rung"] == rung) return r;
  ADD_FAILURE() << "no " << rung << " receipt";
  return bundle;
}

// The claim's line and its verdict line, from the text report.
std::string ClaimLines(const std::string& report, const std::string& id) {
  const size_t at = report.find("  " + id + " ");
  if (at == std::string::npos) return "";
  size_t end = at;
  for (int lines = 0; lines < 3 && end != std::string::npos; ++lines)
    end = report.find('\n', end + 1);
  return report.substr(at, end - at);
}

class SignedEvidence : public ::testing::Test {
 protected:
  void SetUp() override {
    WritePatternFile(dir_.File("data"), 21, 256 << 10);
    serve_ = Serve::Start("tcp", {"--identity", dir_.File("server"), "--data", dir_.File("store")});
    ASSERT_TRUE(serve_);
  }

  // Sends `id` with a signing sender; the bundle --evidence wrote.
  json Send(const std::string& id, const std::string& retention) {
    const std::string evidence = dir_.File(id + ".evidence.json");
    CommandRun sent =
        RunWrit({"send", dir_.File("data"), "--to", serve_->address(), "--id", id, "--identity",
                 dir_.File("sender"), "--retention", retention, "--evidence", evidence});
    EXPECT_EQ(sent.exit_code, 0) << sent.err;
    return ReadJsonFile(evidence);
  }

  std::string KeyOf(const std::string& identity_dir) {
    CommandRun shown = RunWrit({"key", "show", "--identity", identity_dir});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    return shown.out.substr(0, 64);
  }

  TempDir dir_;
  std::unique_ptr<Serve> serve_;
};

TEST_F(SignedEvidence, EveryClaimOfAWritBundleIsSignedAndVerifies) {
  const json bundle = Send("e1", "power-loss");
  ASSERT_GE(bundle["receipts"].size(), 4u) << bundle.dump(2);
  const std::string server_key = bundle["receipts"].back()["signature"]["key_id"];

  CommandRun audited = RunWrit({"audit", dir_.File("e1.evidence.json")});
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  EXPECT_TRUE(EvidenceSays(FirstLine(audited.out), "Signed: ")) << audited.out;
  EXPECT_FALSE(EvidenceSays(audited.out, "NOT SUPPORTED")) << audited.out;
  EXPECT_FALSE(EvidenceSays(audited.out, "stated, not signed")) << audited.out;
  EXPECT_TRUE(EvidenceSays(audited.out, "signed by key " + server_key)) << audited.out;

  CommandRun verified = RunWrit({"verify", dir_.File("e1.evidence.json")});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;

  // Pinned to the receiver alone, the sender's transport receipt is a statement only.
  CommandRun pinned = RunWrit(
      {"audit", dir_.File("e1.evidence.json"), "--key", KeyOf(dir_.File("server")), "--json"});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(pinned.json["signatures"]["pinned"], true);
  EXPECT_EQ(pinned.json["signatures"]["receipts"][0]["state"], "unpinned") << pinned.out;
  EXPECT_EQ(pinned.json["claims"][0]["signed_by"], json::array()) << pinned.out;
  EXPECT_EQ(pinned.json["claims"][0]["verdict"], "supported") << pinned.out;

  std::ofstream(dir_.File("trust")) << "# both ends\n"
                                    << KeyOf(dir_.File("server")) << "\n"
                                    << KeyOf(dir_.File("sender")) << "\n";
  CommandRun trusted =
      RunWrit({"audit", dir_.File("e1.evidence.json"), "--trust", dir_.File("trust")});
  EXPECT_TRUE(EvidenceSays(FirstLine(trusted.out), "(pinned)")) << trusted.out;
  EXPECT_FALSE(EvidenceSays(trusted.out, "stated, not signed")) << trusted.out;
}

TEST_F(SignedEvidence, ATamperedReceiptFailsItsClaim) {
  json bundle = Send("e2", "volatile");
  ReceiptOfRung(bundle, "validated")["issued_at"] = "2020-01-01T00:00:00.000Z";
  CommandRun audited = AuditJson(dir_, bundle);
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  const std::string validated = ClaimLines(audited.out, "c5");
  ASSERT_TRUE(EvidenceSays(validated, "passed its rule"))
      << "c5 is the validated claim: " << audited.out;
  EXPECT_TRUE(EvidenceSays(validated, "NOT SUPPORTED")) << audited.out;
  EXPECT_TRUE(EvidenceSays(audited.out, "does not verify")) << audited.out;
  CommandRun verified = RunWrit({"verify", dir_.File("edited.evidence.json")});
  EXPECT_EQ(verified.exit_code, 5) << verified.out;
}

TEST_F(SignedEvidence, APromiseCopiedIntoAVolatileBundleIsContradicted) {
  json bundle = Send("e3", "volatile");
  ASSERT_EQ(bundle["retention_promises"].size(), 1u) << bundle.dump(2);
  bundle["retention_promises"][0]["survives"] = "power-loss";
  bundle["retention_promises"][0]["medium"] = "disk";
  bundle["claims"].push_back(
      {{"id", "forged"}, {"kind", "durable"}, {"delivery", "e3"}, {"survives", "power-loss"}});
  CommandRun audited = AuditJson(dir_, bundle);
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  const std::string forged = ClaimLines(audited.out, "forged");
  EXPECT_TRUE(EvidenceSays(forged, "NOT SUPPORTED")) << audited.out;
  EXPECT_TRUE(EvidenceSays(forged, "promises only")) << audited.out;
}

TEST_F(SignedEvidence, ReceiptsOfAnotherDeliveryAndNoReceiptsSignNothing) {
  json first = Send("e4", "volatile");
  const json second = Send("e5", "volatile");
  first["receipts"] = second["receipts"];
  CommandRun other = AuditJson(dir_, first);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_TRUE(EvidenceSays(FirstLine(other.out), "No signatures")) << other.out;
  EXPECT_TRUE(EvidenceSays(other.out, "names no delivery of this bundle")) << other.out;
  EXPECT_FALSE(EvidenceSays(other.out, "      signed by key"))
      << "no claim is signed: " << other.out;

  first.erase("receipts");
  CommandRun none = AuditJson(dir_, first);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(EvidenceSays(FirstLine(none.out), "No signatures: nothing in this bundle is signed"))
      << none.out;
  EXPECT_TRUE(EvidenceSays(none.out, "stated, not signed")) << none.out;
}

}  // namespace
}  // namespace writ::testing
