// Runs the real `writ audit` binary: stdout is one JSON document with --json,
// errors go to stderr as "writ: ...", exit 0 for any audit and 2 for bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "audit_test_util.h"

namespace writ::audit::testing {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `writ <args>` through the shell (args are quoted by the caller).
CliRun Writ(const std::string& args, const std::string& stdin_path = "/dev/null") {
  // ctest runs these in parallel: each test gets its own capture files.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string stem =
      ::testing::TempDir() + "/writ-audit-cli-" + test->name() + "-" + std::to_string(::getpid());
  const std::string out = stem + ".out", err = stem + ".err";
  const std::string command = "'" + std::string(WRIT_BINARY) + "' " + args + " <'" + stdin_path +
                              "' >'" + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = ReadText(out);
  run.err = ReadText(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return run;
}

std::string Example(const std::string& name) {
  return std::string(WRIT_AUDIT_EXAMPLES) + "/" + name;
}

// writ dlopens libfabric on first fabric use; audit must not load it (issue 18: its
// dependencies' constructors cost ~0.2 s). The loader's own trace says what was loaded.
TEST(AuditCli, AuditAndVersionDoNotLoadLibfabric) {
  for (const std::string& args :
       {std::string("--version"), "audit '" + Example("rc-233.evidence.json") + "'"}) {
    const std::string trace = ::testing::TempDir() + "/writ-audit-ld-" + std::to_string(::getpid());
    const std::string command = "LD_DEBUG=files '" + std::string(WRIT_BINARY) + "' " + args +
                                " >/dev/null 2>'" + trace + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const std::string loaded = ReadText(trace);
    std::remove(trace.c_str());
    EXPECT_NE(loaded.find("libc.so"), std::string::npos) << "no loader trace for " << args;
    EXPECT_EQ(loaded.find("libfabric"), std::string::npos) << args;
  }
}

// The shipped report is the library's (revision 2, what Audit() and Python give); the CLI
// adds revision 3: `signatures`, and each claim's `signed_by` (none here: no receipts).
nlohmann::json WithoutRevision3(nlohmann::json report) {
  EXPECT_EQ(report["signatures"]["verified"], 0) << report.dump(2);
  EXPECT_EQ(report["signatures"]["receipts"], nlohmann::json::array());
  report.erase("signatures");
  for (auto& claim : report["claims"]) {
    EXPECT_EQ(claim["signed_by"], nlohmann::json::array()) << claim.dump();
    claim.erase("signed_by");
  }
  return report;
}

TEST(AuditCli, JsonReportOfTheExampleIsTheExpectedOne) {
  const CliRun run = Writ("audit '" + Example("rc-233.evidence.json") + "' --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  ASSERT_TRUE(nlohmann::json::accept(run.out));  // one document, nothing else
  EXPECT_EQ(WithoutRevision3(nlohmann::json::parse(run.out)),
            nlohmann::json::parse(ReadText(Example("rc-233.audit.json"))));
}

TEST(AuditCli, ReadsTheBundleFromStdin) {
  const CliRun run = Writ("audit - --json", Example("rc-233.evidence.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(nlohmann::json::accept(run.out)) << run.out;
  EXPECT_EQ(WithoutRevision3(nlohmann::json::parse(run.out)),
            nlohmann::json::parse(ReadText(Example("rc-233.audit.json"))));
}

TEST(AuditCli, AnUnsignedBundleSaysSoInItsFirstLine) {
  const CliRun run = Writ("audit '" + Example("rc-233.evidence.json") + "'");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("No signatures: nothing in this bundle is signed (it embeds no "
                          "receipts); every claim is stated, not signed.\n",
                          0),
            0u)
      << run.out;
}

TEST(AuditCli, HumanOutputExplainsAndAsks) {
  const CliRun run = Writ("audit '" + Example("rc-233.evidence.json") + "'");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Delivery \"RC-233\": 25,165,824 bytes in 3 portions"), std::string::npos);
  EXPECT_NE(run.out.find("Which completion level does this success record guarantee?"),
            std::string::npos);
  EXPECT_NE(run.out.find("Which failure does this acknowledgement survive, and what do you promise "
                         "afterwards?"),
            std::string::npos);
  EXPECT_NE(run.out.find("c2 \"three AI jobs completed\": NOT SUPPORTED"), std::string::npos);
}

TEST(AuditCli, AnAuditThatFindsFailuresStillExitsZero) {
  const CliRun run =
      Writ("audit '" + BundlePath("rule2/error-plausible-byte-len.json") + "' --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto doc = nlohmann::json::parse(run.out);
  EXPECT_EQ(doc["failed"], 1);
  EXPECT_EQ(doc["deliveries"][0]["transport"], "failed");
}

TEST(AuditCli, AMalformedBundleExitsTwoNamingThePath) {
  const CliRun run =
      Writ("audit '" + BundlePath("malformed/portion-bytes-string.json") + "' --json");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "writ: deliveries[0].portions[2].bytes: expected integer\n");
}

TEST(AuditCli, BadJsonAndAMissingFileExitTwo) {
  CliRun run = Writ("audit '" + BundlePath("malformed/truncated.json") + "'");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err.rfind("writ: invalid JSON: ", 0), 0u) << run.err;
  run = Writ("audit '" + BundlePath("does-not-exist.json") + "' --json");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("writ: cannot read ", 0), 0u) << run.err;
}

TEST(AuditCli, EveryRuleBundleAuditsToOneJsonDocument) {
  for (const char* name :
       {"rule1/missing-record.json", "rule3/iwarp.json", "rule4/notification-only.json",
        "rule5/wrong-bytes.json", "rule6/processed.json", "rule7/one-field-missing.json",
        "rule8/retention-claims.json"}) {
    const CliRun run = Writ("audit '" + BundlePath(name) + "' --json");
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.err;
    EXPECT_TRUE(nlohmann::json::accept(run.out)) << name;
  }
}

}  // namespace
}  // namespace writ::audit::testing
