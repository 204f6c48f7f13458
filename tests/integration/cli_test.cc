// The command line people expect (issue #16): help and mistyped subcommands, the exit
// codes of docs/cli.md on error paths, nothing on stdout for a usage error, `writ
// providers`, and `writ send`'s progress bar, timing, summary, `--until retained`,
// stdin with `--id`, and `bytes_moved` on failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "byte_sizes.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Cli, HelpListsSubcommandsAndHelpOfOneIsItsHelp) {
  CommandRun help = RunWrit({"help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  for (const char* sub : {"serve", "send", "query", "store", "providers", "key"})
    EXPECT_TRUE(Has(help.out, sub)) << sub << " missing from:\n" << help.out;
  CommandRun send = RunWrit({"help", "send"});
  EXPECT_EQ(send.exit_code, 0) << send.err;
  EXPECT_TRUE(Has(send.out, "--until")) << send.out;
  CommandRun nested = RunWrit({"help", "store", "ls"});
  EXPECT_EQ(nested.exit_code, 0) << nested.err;
  EXPECT_TRUE(Has(nested.out, "--data")) << nested.out;
}

TEST(Cli, AMistypedSubcommandIsNamedWithTheClosestOne) {
  CommandRun run = RunWrit({"sned", "x"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(Has(run.err, "unknown command 'sned'; did you mean 'send'?")) << run.err;
  CommandRun nested = RunWrit({"store", "lss"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_TRUE(Has(nested.err, "did you mean 'store ls'?")) << nested.err;
  CommandRun help = RunWrit({"help", "sevre"});
  EXPECT_EQ(help.exit_code, 2);
  EXPECT_TRUE(Has(help.err, "did you mean 'serve'?")) << help.err;
  CommandRun option = RunWrit({"--bogus"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_EQ(option.out, "");
  EXPECT_TRUE(Has(option.err, "unknown option '--bogus': options follow a command")) << option.err;
  CommandRun version = RunWrit({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_TRUE(Has(version.out, "writ ")) << version.out;
}

TEST(Cli, UsageErrorsExitTwoWithNothingOnStdout) {
  TempDir dir;
  const std::string file = dir.File("f");
  WritePatternFile(file, 1, 4096);
  const std::vector<std::vector<std::string>> lines = {
      {"send", "-", "--to", "127.0.0.1:1", "--json"},  // stdin needs --id
      {"send", file, "--to", "no-port", "--json"},
      {"send", file, "--to", "127.0.0.1:1", "--chunk-size", "0", "--json"},
      {"send", file, "--to", "127.0.0.1:1", "--until", "kept"},
      {"send", dir.File("missing"), "--to", "127.0.0.1:1", "--json"},
      {"send", file, "--to", "127.0.0.1:1", "--provider", "no-such-provider", "--json"},
      {"serve", "--listen", "127.0.0.1:0", "--provider", "no-such-provider"},
      {"serve", "--listen", "127.0.0.1:0", "--data", dir.File("missing/data")},
      {"store", "ls", "--data", dir.File("missing")},
      {"store", "check", "--data", dir.File("missing")},
      {"store", "quarantine", "ls", "--data", dir.File("missing")},
      {"store", "quarantine", "purge", "--data", dir.File("missing")},
      {"key", "show", "--identity", dir.File("missing/a/b")},
      {"store", "check", "--data", dir.path(), "--key", "not-a-key"},
      {"send", file, "--to", "127.0.0.1:1", "--target-pages", "1,2"},  // no --target
      {"send", file, "--to", "127.0.0.1:1", "--target", "kv", "--target-pages", "1,,2"},
      {"send", file, "--to", "127.0.0.1:1", "--target", "kv", "--target-pages", "1,x"},
      {"send", file, "--to", "127.0.0.1:1", "--target", "kv", "--target-offset", "4KiB",
       "--target-pages", "1"},
      {"send", file, file, "--to", "127.0.0.1:1", "--target", "kv"},
  };
  for (const auto& line : lines) {
    CommandRun run = RunWrit(line);
    std::string shown;
    for (const auto& word : line) shown += word + " ";
    EXPECT_EQ(run.exit_code, 2) << shown << "\n" << run.err;
    EXPECT_EQ(run.out, "") << shown;
    EXPECT_TRUE(run.err.rfind("writ: ", 0) == 0) << shown << "\n" << run.err;
  }
}

TEST(Cli, AnUnofferedProviderIsNamedWithTheOffered) {
  CommandRun run = RunWrit({"serve", "--listen", "127.0.0.1:0", "--provider", "no-such-provider"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Has(run.err, "not offered on this machine")) << run.err;
  EXPECT_TRUE(Has(run.err, "tcp")) << run.err;
}

TEST(Cli, VerifyWithAMalformedKeyIsAUsageError) {
  TempDir dir;
  CommandRun demo = RunWrit({"demo", "--json"});
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  const std::string receipt = dir.File("r.json");
  for (const auto& r : demo.json["receipts"]) {
    if (r["rung"] == "validated") std::ofstream(receipt) << r.dump();  // the receiver signed it
  }
  EXPECT_EQ(RunWrit({"verify", receipt}).exit_code, 0);
  CommandRun bad = RunWrit({"verify", receipt, "--key", "zz"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  CommandRun other = RunWrit({"verify", receipt, "--key", std::string(64, 'a')});
  EXPECT_EQ(other.exit_code, 5) << "a well-formed key that did not sign it: invalid";
}

TEST(Cli, ProvidersDescribesWhatThisMachineOffers) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  CommandRun run = RunWrit({"providers", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.is_object()) << run.out;
  EXPECT_FALSE(run.json["default"].get<std::string>().empty());
  const auto& all = run.json["providers"];
  auto tcp =
      std::find_if(all.begin(), all.end(), [](const auto& p) { return p["provider"] == "tcp"; });
  ASSERT_NE(tcp, all.end()) << run.out;
  EXPECT_EQ((*tcp)["usable"], true);
  EXPECT_EQ((*tcp)["keys_checked"], true);
  EXPECT_FALSE((*tcp)["domains"].empty());
  EXPECT_FALSE((*tcp)["completion_levels"].empty());
  for (const auto& p : all) {
    if (p["provider"] == "shm" && p["usable"] == true) {
      EXPECT_EQ(p["keys_checked"], false);
    }
  }
  CommandRun text = RunWrit({"providers"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_TRUE(Has(text.out, "keys checked:")) << text.out;
}

class CliSend : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    serve_ = Serve::Start("tcp");
    ASSERT_TRUE(serve_);
    file_ = dir_.File("four");
    WritePatternFile(file_, 4, 4 * kMiB);
  }
  std::vector<std::string> Send(std::vector<std::string> extra) {
    std::vector<std::string> line = {"send",         file_, "--to", serve_->address(),
                                     "--chunk-size", "1MiB"};
    line.insert(line.end(), extra.begin(), extra.end());
    return line;
  }
  TempDir dir_;
  std::unique_ptr<Serve> serve_;
  std::string file_;
};

TEST_F(CliSend, AForcedProgressBarAndTimingAreReportedWithJson) {
  CommandRun run = RunWrit(Send({"--id", "p-1", "--json", "--progress"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Has(run.err, "100.0%")) << run.err;
  EXPECT_TRUE(Has(run.err, "/s")) << "a rate: " << run.err;
  // After the last chunk: what it waits for, then the end.
  EXPECT_TRUE(Has(run.err, "; validating")) << run.err;
  EXPECT_TRUE(Has(run.err, "; done in ")) << run.err;
  EXPECT_TRUE(run.json.contains("timing")) << run.out;
  EXPECT_EQ(run.json["timing"]["bytes_written"], 4 * kMiB);
  EXPECT_TRUE(run.json["timing"]["elapsed_s"].is_number());
  EXPECT_TRUE(run.json["timing"]["bytes_per_second"].is_number());
  // One rate: bytes written over the time to the last chunk, not to the last receipt.
  const double write_s = run.json["timing"]["write_s"];
  EXPECT_LE(write_s, run.json["timing"]["elapsed_s"].get<double>());
  EXPECT_NEAR(run.json["timing"]["bytes_per_second"].get<double>(), 4 * kMiB / write_s, 1.0);
  EXPECT_EQ(run.json["bytes_moved"], true);
  CommandRun quiet = RunWrit(Send({"--id", "p-2", "--json"}));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_FALSE(Has(quiet.err, "%")) << "no bar when stderr is not a terminal: " << quiet.err;
}

TEST_F(CliSend, HumanOutputSummarisesChunksUnlessVerbose) {
  CommandRun summary = RunWrit(Send({"--id", "s-1"}));
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_TRUE(Has(summary.out, "work completions: 4 record(s): 4 success, 0 error")) << summary.out;
  EXPECT_EQ(Count(summary.out, "  success\n"), 0u) << summary.out;
  EXPECT_TRUE(Has(summary.out, "wrote 4.0 MiB in ")) << summary.out;
  CommandRun verbose = RunWrit(Send({"--id", "s-2", "--verbose"}));
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_EQ(Count(verbose.out, "  success\n"), 4u) << verbose.out;
}

TEST_F(CliSend, UntilRetainedWaitsForTheRetentionClassAsked) {
  CommandRun run = RunWrit(Send({"--id", "r-1", "--until", "retained", "--json"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.json["reached"]["rung"], "validated");
  EXPECT_EQ(run.json["reached"]["retention"], "volatile");
  EXPECT_EQ(Rungs(run.json).back(), "retained");
  CommandRun durable =
      RunWrit(Send({"--id", "r-2", "--until", "retained", "--retention", "power-loss", "--json"}));
  EXPECT_EQ(durable.exit_code, 6) << "this serve has no --data: " << durable.err;
}

TEST_F(CliSend, NothingWrittenMeansBytesMovedIsFalse) {
  // Refused at the announce: no chunk was ever written.
  CommandRun refused = RunWrit(Send({"--id", "b-1", "--retention", "power-loss", "--json"}));
  EXPECT_EQ(refused.exit_code, 6) << refused.err;
  EXPECT_EQ(refused.json["bytes_moved"], false) << refused.out;
  EXPECT_TRUE(refused.json["work_completions"].empty());
  // No receiver at all.
  CommandRun unreachable = RunWrit({"send", file_, "--to", "127.0.0.1:1", "--json"});
  EXPECT_EQ(unreachable.exit_code, 4) << unreachable.err;
  EXPECT_EQ(unreachable.json["bytes_moved"], false) << unreachable.out;
}

// Dedupe answers only the key that delivered: an unsigned re-send moves the bytes again,
// and says so in one line naming the flag that avoids it (docs/cli.md).
TEST_F(CliSend, AnUnsignedResendMovesTheBytesAgainAndSaysWhy) {
  CommandRun first = RunWrit(Send({"--id", "u-1", "--json"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(Has(first.err, "--identity")) << "nothing was held before: " << first.err;
  CommandRun again = RunWrit(Send({"--id", "u-1", "--json"}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.json["bytes_moved"], true) << again.out;
  EXPECT_EQ(Count(again.err, "\n"), 1u) << again.err;
  EXPECT_TRUE(Has(again.err, "u-1 was already retained")) << again.err;
  EXPECT_TRUE(Has(again.err, "because this send is unsigned: with --identity DIR")) << again.err;
  CommandRun text = RunWrit(Send({"--id", "u-1"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Has(text.err, "--identity DIR")) << "human output too: " << text.err;
}

TEST_F(CliSend, StandardInputIsSentUnderTheIdGiven) {
  const std::string err = dir_.File("stdin.err");
  auto proc =
      StartWrit({"send", "-", "--to", serve_->address(), "--id", "from-stdin", "--json"}, err);
  ASSERT_TRUE(proc);
  ASSERT_TRUE(proc->WriteLine("bytes from a pipe").ok());
  proc->CloseStdin();
  CommandRun run = FinishWrit(*proc, err);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.json["delivery"]["id"], "from-stdin");
  EXPECT_EQ(run.json["delivery"]["bytes"], 18);
}

// writ serve exposes no buffer: an addressed send is refused by name, reason `target` (exit 3),
// the flags having built the target block (its pages or offset reach the receiver's check).
TEST_F(CliSend, AnAddressedSendToAServeIsRefusedNamingTheTarget) {
  for (const std::vector<std::string>& where :
       {std::vector<std::string>{"--target-pages", "3,0,2,1"},
        std::vector<std::string>{"--target-offset", "64KiB"}, std::vector<std::string>{}}) {
    std::vector<std::string> extra = {"--id", "t-1", "--json", "--target", "kv"};
    extra.insert(extra.end(), where.begin(), where.end());
    CommandRun run = RunWrit(Send(extra));
    EXPECT_EQ(run.exit_code, 3) << run.err;
    EXPECT_EQ(run.json["error"]["kind"], "refused") << run.out;
    const std::string message = run.json["error"]["message"].get<std::string>();
    EXPECT_TRUE(Has(message, "(target)")) << message;
    EXPECT_TRUE(Has(message, "no target kv is exposed by this receiver")) << message;
    EXPECT_EQ(run.json["bytes_moved"], false) << run.out;
  }
}

}  // namespace
}  // namespace writ::testing
