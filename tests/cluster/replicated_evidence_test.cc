// Issue 27's evidence bundles: `writ send --retention replicated:K --evidence` writes one
// writ.evidence/1 bundle with every replica's evidence, receipts and promise and the
// certificate; `writ audit` supports the replicated:K claims only from K verified members
// (distinct keys, distinct signed domains, one delivery) and names why a forgery is not.
// Static receivers (`--to`, `writ serve --domain`): no etcd is needed.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "temp_dir.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using nlohmann::json;

class ReplicatedEvidenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WritePatternFile(dir_.File("payload"), 27, 3 << 20);
    WritePatternFile(dir_.File("other"), 28, 1 << 20);
    for (const char* domain : {"rack-a", "rack-b", "rack-c"}) {
      auto serve = Serve::Start(
          "tcp", {"--data", dir_.File(std::string("data-") + domain), "--domain", domain});
      ASSERT_NE(serve, nullptr);
      serves_.push_back(std::move(serve));
    }
  }

  // `writ send FILE --id ID --retention replicated:2 --to A,B,C --evidence ID.evidence.json`:
  // its bundle.
  json SendReplicated(const std::string& file, const std::string& id) {
    std::string to;
    for (const auto& s : serves_) to += (to.empty() ? "" : ",") + s->address();
    CommandRun run =
        RunWrit({"send", dir_.File(file), "--id", id, "--retention", "replicated:2", "--to", to,
                 "--json", "--evidence", dir_.File(id + ".evidence.json")});
    EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
    std::ifstream in(dir_.File(id + ".evidence.json"));
    return json::parse(in, nullptr, false);
  }

  // `writ audit --json` of `bundle`, written as NAME.
  json Audit(const json& bundle, const std::string& name) {
    std::ofstream(dir_.File(name)) << bundle.dump(2);
    CommandRun run = RunWrit({"audit", dir_.File(name), "--json"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.json;
  }

  static json ClaimOfKind(const json& bundle, const json& report, const std::string& kind) {
    for (size_t i = 0; i < bundle["claims"].size(); ++i)
      if (bundle["claims"][i]["kind"] == kind) return report["claims"][i];
    ADD_FAILURE() << "the bundle makes no " << kind << " claim";
    return json::object();
  }

  // Both replicated claims are refused, their reasons naming `why`.
  void ExpectRefused(const json& bundle, const std::string& name, const std::string& why) {
    const json report = Audit(bundle, name);
    for (const char* kind : {"durable", "copies"}) {
      const json claim = ClaimOfKind(bundle, report, kind);
      EXPECT_EQ(claim["verdict"], "not_supported") << name << " " << kind << ": " << claim.dump();
      EXPECT_NE(claim["reason"].get<std::string>().find(why), std::string::npos)
          << name << " " << kind << ": " << claim["reason"];
      EXPECT_EQ(claim["signed_by"], json::array()) << name;
    }
  }

  TempDir dir_{"writ-replicated-evidence"};
  std::vector<std::unique_ptr<Serve>> serves_;
};

TEST_F(ReplicatedEvidenceTest, ARealReplicatedSendsBundleAuditsWithTheReplicatedClaimSupported) {
  const json bundle = SendReplicated("payload", "ckpt-7");
  ASSERT_TRUE(bundle.is_object()) << "not one bundle";
  EXPECT_EQ(bundle["schema"], "writ.evidence/1");
  ASSERT_EQ(bundle["certificate"]["members"].size(), 2u);
  ASSERT_EQ(bundle["deliveries"].size(), 1u);
  // Every replica's promise, and the replicated one over them.
  size_t power_loss = 0, replicated = 0;
  for (const json& p : bundle["retention_promises"]) {
    power_loss += p["survives"] == "power-loss";
    replicated += p["survives"] == "replicated:2" && p["medium"] == "replicas";
  }
  EXPECT_GE(power_loss, 2u);
  EXPECT_EQ(replicated, 1u);
  EXPECT_GE(bundle["replicas"].size(), 2u);

  const json report = Audit(bundle, "real.json");
  ASSERT_EQ(report["deliveries"].size(), 1u);
  EXPECT_EQ(report["deliveries"][0]["transport"], "established");
  EXPECT_EQ(report["deliveries"][0]["retention"], "replicated:2");
  for (size_t i = 0; i < report["claims"].size(); ++i)
    EXPECT_EQ(report["claims"][i]["verdict"], "supported")
        << bundle["claims"][i].dump() << report["claims"][i].dump();
  for (const char* kind : {"durable", "copies"}) {
    const json claim = ClaimOfKind(bundle, report, kind);
    const std::set<std::string> keys(claim["signed_by"].begin(), claim["signed_by"].end());
    EXPECT_EQ(keys.size(), 2u) << claim.dump();
    const std::string reason = claim["reason"];
    EXPECT_NE(reason.find("2 distinct signed failure domains"), std::string::npos) << reason;
    EXPECT_NE(reason.find("Not established"), std::string::npos) << reason;
    EXPECT_NE(reason.find("one domain"), std::string::npos) << reason;
    EXPECT_NE(reason.find("lied"), std::string::npos) << reason;
  }
  EXPECT_EQ(report["signatures"]["certificate"]["members"].size(), 2u);
}

TEST_F(ReplicatedEvidenceTest, ForgedBundlesAreNotSupportedWithTheReasonNamed) {
  const json bundle = SendReplicated("payload", "forge-me");
  const json other = SendReplicated("other", "another-delivery");
  ASSERT_TRUE(bundle.is_object() && other.is_object());
  ASSERT_EQ(bundle["certificate"]["members"].size(), 2u);

  json removed = bundle;
  removed["certificate"]["members"].erase(1);
  ExpectRefused(removed, "removed.json", "Only 1 of the certificate's 1 members count");

  json duplicated = bundle;
  duplicated["certificate"]["members"][1] = duplicated["certificate"]["members"][0];
  ExpectRefused(duplicated, "duplicated.json", "already counted (certificate.members[0])");

  json relabelled = bundle;
  const std::string domain = relabelled["certificate"]["members"][0]["failure_domain"];
  relabelled["certificate"]["members"][1]["failure_domain"] = domain;
  ExpectRefused(relabelled, "relabelled.json", "certificate.members[1] does not verify");

  json foreign = bundle;
  foreign["certificate"]["members"][1] = other["certificate"]["members"][1];
  ExpectRefused(foreign, "foreign.json", "names delivery \"another-delivery\"");

  json uncertified = bundle;
  uncertified.erase("certificate");
  ExpectRefused(uncertified, "uncertified.json", "no replicated certificate");
}

}  // namespace
}  // namespace writ::testing
