// The retention contract through the real binaries: what a retained receipt
// says per class, `writ query` and `writ store ls|cat|check` with their exit
// codes, dedupe across a restart, recovery's report, corruption found offline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fault_harness.h"
#include "requirement.h"

namespace writ::testing::faults {
namespace {

using json = nlohmann::json;

class RetentionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    data_ = dir_.File("data");
  }
  json Retained(const CommandRun& run) {
    for (const auto& r : run.json.value("receipts", json::array())) {
      if (r.value("rung", "") == "retained") return r;
    }
    ADD_FAILURE() << "no retained receipt: " << run.out << run.err;
    return json::object();
  }
  TempDir dir_;
  std::string data_;
};

TEST_F(RetentionCli, ReceiptsNameTheObjectThePointTheFailureThePromiseAndTheEvidence) {
  WritePatternFile(dir_.File("a"), 1, 5 << 20);
  WritePatternFile(dir_.File("b"), 2, 100000);
  WritePatternFile(dir_.File("v"), 3, 1000);
  auto r = Receiver::Start(data_, dir_.File("serve.err"));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ParseRecovery().found) << "serve reports what recovery found:\n" << r->Stderr();

  // Signed: only the sender that delivered A is answered from the store later.
  CommandRun pl =
      RunWrit({"send", dir_.File("a"), "--to", r->address(), "--id", "A", "--chunk-size", "1MiB",
               "--retention", "power-loss", "--json", "--identity", dir_.File("sender")});
  ASSERT_EQ(pl.exit_code, 0) << pl.err;
  EXPECT_EQ(pl.json["reached"]["retention"], "power-loss");
  const json ra = Retained(pl);
  EXPECT_EQ(ra["delivery"]["id"], "A");
  EXPECT_EQ(ra["delivery"]["bytes"], 5 << 20);
  EXPECT_EQ(ra["delivery"]["digest"], pl.json["delivery"]["digest"]);
  EXPECT_EQ(ra["retention"], "power-loss");
  EXPECT_EQ(ra["survives"], "power-loss");
  const std::string point = ra["acknowledged_point"], promise = ra["promise_after_failure"],
                    evidence = ra["evidence"];
  EXPECT_NE(point.find("fdatasync'd"), std::string::npos) << point;
  EXPECT_NE(point.find("synchronous=FULL"), std::string::npos) << point;
  EXPECT_NE(promise.find("power loss"), std::string::npos) << promise;
  EXPECT_NE(promise.find("`writ query A --to HOST:PORT`"), std::string::npos)
      << "the hint is a command that runs as written: " << promise;
  EXPECT_NE(promise.find("`writ store cat A --data "), std::string::npos) << promise;
  EXPECT_NE(promise.find(pl.json["delivery"]["digest"].get<std::string>()), std::string::npos)
      << promise;
  // One pwrite per window (the harness's are 4 MiB, and the tail shrinks to one chunk:
  // docs/architecture.md): chunks 0-1, then 2, 3 and 4.
  EXPECT_NE(evidence.find("4 pwrite call(s), 5242880 bytes"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("fdatasync(payloads/"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("fsync(directory payloads/) = 0"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("xSync(index.db-wal) = ok"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("filesystem of " + data_ + ": "), std::string::npos) << evidence;

  CommandRun pr = RunWrit({"send", dir_.File("b"), "--to", r->address(), "--id", "B", "--retention",
                           "process-restart", "--json"});
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  const json rb = Retained(pr);
  EXPECT_EQ(rb["retention"], "process-restart");
  EXPECT_EQ(rb["survives"], "process-restart");
  EXPECT_NE(rb["acknowledged_point"].get<std::string>().find("no fsync or fdatasync"),
            std::string::npos);
  EXPECT_NE(
      rb["promise_after_failure"].get<std::string>().find("Not promised after a host power loss"),
      std::string::npos);
  EXPECT_EQ(rb["evidence"].get<std::string>().find("fdatasync("), std::string::npos)
      << "a process-restart receipt claims no sync it did not do";

  // Volatile deliveries of a receiver with --data stay out of the data directory.
  CommandRun vol = RunWrit({"send", dir_.File("v"), "--to", r->address(), "--id", "V", "--json"});
  ASSERT_EQ(vol.exit_code, 0) << vol.err;
  EXPECT_EQ(Retained(vol)["retention"], "volatile");

  CommandRun ls = RunWrit({"store", "ls", "--data", data_, "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  ASSERT_EQ(ls.json["deliveries"].size(), 2u) << ls.out;
  EXPECT_EQ(ls.json["deliveries"][0]["id"], "A");
  EXPECT_EQ(ls.json["deliveries"][0]["retention"], "power-loss");
  EXPECT_EQ(ls.json["deliveries"][0]["digest"], pl.json["delivery"]["digest"]);
  EXPECT_EQ(ls.json["deliveries"][1]["id"], "B");
  CommandRun human = RunWrit({"store", "ls", "--data", data_});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("2 retained deliveries"), std::string::npos) << human.out;

  CommandRun cat = RunWrit({"store", "cat", "A", "--data", data_});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == ReadFile(dir_.File("a")));
  EXPECT_EQ(RunWrit({"store", "cat", "V", "--data", data_}).exit_code, 1)
      << "volatile: not in the store";
  EXPECT_EQ(RunWrit({"store", "cat", "nope", "--data", data_}).exit_code, 1);
  EXPECT_EQ(RunWrit({"store", "ls", "--data", dir_.File("not-a-data-dir")}).exit_code, 2);
  CommandRun check = RunWrit({"store", "check", "--data", data_, "--json"});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_EQ(check.json["checked"], 2);
  EXPECT_EQ(check.json["ok"], 2);

  // Restart: both classes survive a clean stop; the same id and content moves no bytes; other
  // content under the same id is refused.
  EXPECT_EQ(r->Stop(), 0);
  r = Receiver::Start(data_, dir_.File("serve2.err"), {"--verify-on-start", "all"});
  ASSERT_TRUE(r);
  const auto rec = r->ParseRecovery();
  EXPECT_EQ(rec.retained, 2u);
  EXPECT_EQ(rec.rehashed, 2u);
  CommandRun q = RunWrit({"query", "A", "--to", r->address(), "--json"});
  EXPECT_EQ(q.exit_code, 0);
  EXPECT_EQ(q.json["retention"], "power-loss");
  EXPECT_EQ(q.json["receipts"].size(), 3u) << "received, validated, retained";
  EXPECT_EQ(RunWrit({"query", "V", "--to", r->address()}).exit_code, 1)
      << "volatile died with the process";
  CommandRun again =
      RunWrit({"send", dir_.File("a"), "--to", r->address(), "--id", "A", "--chunk-size", "1MiB",
               "--retention", "power-loss", "--json", "--identity", dir_.File("sender")});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.json["bytes_moved"], false);
  EXPECT_TRUE(again.json["work_completions"].empty());
  EXPECT_EQ(Retained(again), ra) << "the very receipt issued the first time";
  CommandRun other = RunWrit(
      {"send", dir_.File("b"), "--to", r->address(), "--id", "A", "--retention", "power-loss"});
  EXPECT_EQ(other.exit_code, 3) << other.err;
  EXPECT_NE(other.err.find("conflicting id"), std::string::npos) << other.err;
  // Held as process-restart, asked for power-loss: the copy is upgraded, not refused.
  CommandRun stronger = RunWrit({"send", dir_.File("b"), "--to", r->address(), "--id", "B",
                                 "--retention", "power-loss", "--json"});
  EXPECT_EQ(stronger.exit_code, 0) << stronger.err;
  EXPECT_EQ(Retained(stronger)["retention"], "power-loss");
  EXPECT_EQ(r->Stop(), 0);
}

TEST_F(RetentionCli, CorruptionIsFoundOfflineAndNeverReportedRetainedAfterRestart) {
  WritePatternFile(dir_.File("a"), 4, 70000);
  WritePatternFile(dir_.File("b"), 5, 70000);
  auto r = Receiver::Start(data_, dir_.File("serve.err"));
  ASSERT_TRUE(r);
  ASSERT_EQ(RunWrit({"send", dir_.File("a"), "--to", r->address(), "--id", "A", "--retention",
                     "power-loss"})
                .exit_code,
            0);
  ASSERT_EQ(RunWrit({"send", dir_.File("b"), "--to", r->address(), "--id", "B", "--retention",
                     "process-restart"})
                .exit_code,
            0);
  EXPECT_EQ(r->Stop(), 0);
  CommandRun ls = RunWrit({"store", "ls", "--data", data_, "--json"});
  ASSERT_EQ(ls.json["deliveries"].size(), 2u);
  // Flip one byte of B's payload, as a torn write would.
  const std::string b_path = data_ + "/" + ls.json["deliveries"][1]["location"].get<std::string>();
  const int fd = ::open(b_path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, 1234), 1);
  c ^= 1;
  ASSERT_EQ(::pwrite(fd, &c, 1, 1234), 1);
  ::close(fd);

  CommandRun check = RunWrit({"store", "check", "--data", data_, "--json"});
  EXPECT_EQ(check.exit_code, 5) << check.out;
  ASSERT_EQ(check.json["mismatched"].size(), 1u);
  EXPECT_EQ(check.json["mismatched"][0]["id"], "B");
  // Only the deliveries named: A alone passes, B alone does not, an unknown id is not found.
  CommandRun only_a = RunWrit({"store", "check", "A", "--data", data_, "--json"});
  EXPECT_EQ(only_a.exit_code, 0) << only_a.out << only_a.err;
  EXPECT_EQ(only_a.json["checked"], 1);
  CommandRun only_b = RunWrit({"store", "check", "B", "--data", data_, "--json"});
  EXPECT_EQ(only_b.exit_code, 5) << only_b.out;
  EXPECT_EQ(only_b.json["checked"], 1);
  CommandRun unknown = RunWrit({"store", "check", "A", "nope", "--data", data_});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out;
  EXPECT_NE(unknown.err.find("no retained delivery nope"), std::string::npos) << unknown.err;
  CommandRun cat = RunWrit({"store", "cat", "B", "--data", data_});
  EXPECT_EQ(cat.exit_code, 5) << "bytes that do not have the digest: " << cat.err;
  EXPECT_EQ(RunWrit({"store", "cat", "A", "--data", data_}).exit_code, 0);

  // Recovery re-hashes process-restart payloads by default: B is dropped, A stays.
  r = Receiver::Start(data_, dir_.File("serve2.err"));
  ASSERT_TRUE(r);
  const auto rec = r->ParseRecovery();
  EXPECT_EQ(rec.corrupt, 1u) << r->Stderr();
  EXPECT_EQ(rec.retained, 1u);
  EXPECT_NE(r->Stderr().find("dropped corrupt delivery B (process-restart)"), std::string::npos)
      << r->Stderr();
  EXPECT_EQ(RunWrit({"query", "B", "--to", r->address()}).exit_code, 1);
  EXPECT_EQ(RunWrit({"query", "A", "--to", r->address()}).exit_code, 0);
  EXPECT_EQ(RunWrit({"store", "check", "--data", data_}).exit_code, 0);
  // The id is free again and B can be sent anew.
  EXPECT_EQ(RunWrit({"send", dir_.File("b"), "--to", r->address(), "--id", "B", "--retention",
                     "power-loss"})
                .exit_code,
            0);
  EXPECT_EQ(r->Stop(), 0);
}

TEST_F(RetentionCli, ServeRejectsAnUnknownVerifyMode) {
  CommandRun run =
      RunWrit({"serve", "--listen", "127.0.0.1:0", "--data", data_, "--verify-on-start", "some"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
}

}  // namespace
}  // namespace writ::testing::faults
