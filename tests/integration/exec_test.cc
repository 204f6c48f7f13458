// writ serve --exec: the processing command, with real `writ serve` and `writ send`
// processes and real commands (sha256sum, one that fails, one that hangs).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

const json* ReceiptOf(const json& send_output, const std::string& rung) {
  for (const auto& r : send_output["receipts"]) {
    if (r["rung"] == rung) return &r;
  }
  return nullptr;
}

class ExecCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve on this machine");
    WritePatternFile(dir_.File("payload"), 16, 300000);
  }
  // `writ serve --exec COMMAND EXTRA...`, its stderr readable.
  std::unique_ptr<Serve> StartServe(const std::string& command,
                                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--identity", dir_.File("identity"), "--exec", command};
    args.insert(args.end(), extra.begin(), extra.end());
    return Serve::StartWithStderr("tcp", args);
  }
  CommandRun Send(const Serve& serve, const std::string& id, const std::string& until) {
    return RunWrit({"send", dir_.File("payload"), "--to", serve.address(), "--id", id, "--rule",
                    "sha256", "--until", until, "--json"});
  }

  TempDir dir_;
};

TEST_F(ExecCommand, Sha256sumIsTheProcessedRungAndItsOutputIsLogged) {
  auto serve = StartServe("sha256sum");
  ASSERT_TRUE(serve);
  CommandRun run = Send(*serve, "summed", "processed");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.json["reached"]["rung"], "processed");
  const json* processed = ReceiptOf(run.json, "processed");
  ASSERT_NE(processed, nullptr) << run.out;
  EXPECT_EQ((*processed)["step"], "sha256sum");
  EXPECT_NE((*processed)["statement"].get<std::string>().find("exited with status 0"),
            std::string::npos)
      << (*processed)["statement"];
  // sha256sum prints the digest of its standard input: the delivery's own.
  const std::string digest = run.json["delivery"]["digest"];
  auto line = serve->ReadLineStartingWith("writ: exec summed: ", 10s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(*line, "writ: exec summed: " + digest + "  -");
  // The receipts, the processed one included, are what the audit accepts.
  const std::string evidence = dir_.File("evidence.json");
  CommandRun again = RunWrit({"send", dir_.File("payload"), "--to", serve->address(), "--id",
                              "summed-2", "--until", "processed", "--evidence", evidence});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  CommandRun audit = RunWrit({"audit", evidence, "--json"});
  EXPECT_EQ(audit.exit_code, 0) << audit.out << audit.err;
}

TEST_F(ExecCommand, ANonZeroExitIsARefusalNamingTheStatus) {
  auto serve = StartServe("echo 'cannot use this' >&2; exit 3");
  ASSERT_TRUE(serve);
  CommandRun run = Send(*serve, "failing", "processed");
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.json["reached"]["rung"], "validated");
  EXPECT_EQ(ReceiptOf(run.json, "processed"), nullptr);
  const std::string why = run.json["error"]["message"];
  EXPECT_NE(why.find("exited with status 3"), std::string::npos) << why;
  EXPECT_NE(why.find("(processing): processing step"), std::string::npos)
      << "the reason is the step's, not `internal`: " << why;
  auto line = serve->ReadLineStartingWith("writ: exec failing: ", 10s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(*line, "writ: exec failing: cannot use this");
}

TEST_F(ExecCommand, AHangingCommandTimesOutAndItsProcessGroupIsKilled) {
  // The shell starts `sleep` in its group and says which process it is.
  auto serve = StartServe("sleep 60 & echo $! > " + dir_.File("sleeper") + "; wait",
                          {"--exec-timeout", "1"});
  ASSERT_TRUE(serve);
  CommandRun run = Send(*serve, "hanging", "processed");
  EXPECT_NE(run.exit_code, 0) << run.out;
  const std::string why = run.json["error"]["message"];
  EXPECT_NE(why.find("timed out after 1s"), std::string::npos) << why;
  const std::string sleeper = ReadFile(dir_.File("sleeper"));
  ASSERT_FALSE(sleeper.empty());
  // Killed with the group: gone, or a zombie waiting for its new parent to reap it.
  const std::string stat = ReadFile("/proc/" + sleeper.substr(0, sleeper.find('\n')) + "/stat");
  const size_t state = stat.rfind(") ");
  EXPECT_TRUE(stat.empty() || (state != std::string::npos && stat[state + 2] == 'Z')) << stat;
}

TEST_F(ExecCommand, TheCommandSeesTheDeliveryInItsEnvironmentAndRunsOnlyWhenAsked) {
  auto serve = StartServe(R"(printf '%s|%s|%s|%s' "$WRIT_DELIVERY_ID" "$WRIT_BYTES" )"
                          R"("$WRIT_RULE" "$WRIT_DIGEST" > )" +
                          dir_.File("seen-$WRIT_DELIVERY_ID"));
  ASSERT_TRUE(serve);
  // A delivery that asks for less than processed is not processed.
  CommandRun validated = Send(*serve, "plain", "validated");
  ASSERT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_EQ(ReceiptOf(validated.json, "processed"), nullptr);
  EXPECT_FALSE(Exists(dir_.File("seen-plain")));

  CommandRun processed = Send(*serve, "looked-at", "processed");
  ASSERT_EQ(processed.exit_code, 0) << processed.err;
  const std::string digest = processed.json["delivery"]["digest"];
  EXPECT_EQ(ReadFile(dir_.File("seen-looked-at")), "looked-at|300000|sha256|" + digest);
}

TEST_F(ExecCommand, NoMoreCommandsRunAtOnceThanTheConcurrencyAllows) {
  // Each command holds a directory while it runs: a second one at the same time would fail.
  const std::string held = dir_.File("running");
  auto serve = StartServe("mkdir " + held + " || exit 9; sleep 0.3; rmdir " + held,
                          {"--exec-concurrency", "1"});
  ASSERT_TRUE(serve);
  const std::vector<std::string> ids = {"first", "second", "third"};
  std::vector<std::unique_ptr<ChildProcess>> senders;
  for (const auto& id : ids) {
    senders.push_back(StartWrit({"send", dir_.File("payload"), "--to", serve->address(), "--id", id,
                                 "--until", "processed", "--json"},
                                dir_.File(id + ".err")));
    ASSERT_TRUE(senders.back());
  }
  for (size_t i = 0; i < senders.size(); ++i) {
    CommandRun run = FinishWrit(*senders[i], dir_.File(ids[i] + ".err"));
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.json["reached"]["rung"], "processed") << run.out;
  }
}

}  // namespace
}  // namespace writ::testing
