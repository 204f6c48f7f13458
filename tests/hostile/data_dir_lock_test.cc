// The data directory's lock cannot be taken from under a running serve: deleting a lock
// file (`rm DIR/lock`, as `store rm` scripts or a cleanup did) let a second serve in, whose
// recovery raced the first's commits. The lock is the directory itself now (store/dir_lock.h).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::string LockTestFileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `writ serve --data DIR` that must not start: its exit code (-2 when it did start).
int SecondServeExit(const TempDir& tmp, const std::string& data, std::string* err) {
  const std::string err_path = tmp.File("second.err");
  auto proc = StartWrit({"serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--data", data},
                        err_path);
  if (!proc) return -1;
  int exit_code = -1;
  if (proc->ReadLine(60s).ok()) {  // it started: a second writer on the directory
    proc->Kill(SIGTERM);
    (void)proc->Wait(60s);
    exit_code = -2;
  } else {
    auto code = proc->Wait(60s);
    exit_code = code.ok() ? *code : -1;
  }
  *err = LockTestFileText(err_path);
  return exit_code;
}

TEST(DataDirLock, DeletingEveryFileNamedLockLetsNoSecondWriterIn) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir tmp;
  const std::string data = tmp.File("data");
  auto first = Serve::StartWithStderr("tcp", {"--data", data});
  ASSERT_TRUE(first);
  // The operator's mistake: whatever lock file there is, gone.
  std::filesystem::remove(data + "/lock");
  std::string err;
  EXPECT_EQ(SecondServeExit(tmp, data, &err), 6) << err;
  EXPECT_NE(err.find("in use by another writ process"), std::string::npos) << err;
  // A writing store command is refused too.
  CommandRun purge = RunWrit({"store", "quarantine", "purge", "--data", data});
  EXPECT_EQ(purge.exit_code, 6) << purge.err;
  // The first serve goes on: a power-loss delivery is retained and checks.
  WritePatternFile(tmp.File("f"), 41, 100000);
  CommandRun sent = RunWrit({"send", tmp.File("f"), "--to", first->address(), "--id", "kept",
                             "--retention", "power-loss", "--json"});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(first->Stop(), 0);
  CommandRun check = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // Once the first is gone the directory is free again.
  auto next = Serve::StartWithStderr("tcp", {"--data", data});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->Stop(), 0);
}

}  // namespace
}  // namespace writ::testing
