// A careless operator and the data directory (issue #12): a missing index or payload
// directory, two serves on one directory, payloads damaged in place, index rows that do not
// match their receipts or name files outside the directory. The store never deletes what it
// cannot explain, and never reports retained what it cannot re-verify.
#include <gtest/gtest.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "writ_harness.h"

namespace writ::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::unique_ptr<Serve> StartOn(const std::string& data, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--data", data};
  args.insert(args.end(), extra.begin(), extra.end());
  return Serve::StartWithStderr("tcp", args);
}

CommandRun Send(const std::string& address, const std::string& file, const std::string& id,
                const std::string& retention) {
  return RunWrit({"send", file, "--to", address, "--id", id, "--retention", retention, "--json"});
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().string());
  return out;
}

std::string ReadAllOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Flips one byte in the middle of the file: same size, other content.
void CorruptInPlace(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(f.tellg());
  ASSERT_GT(size, 0);
  f.seekg(size / 2);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(~c);
  f.seekp(size / 2);
  f.write(&c, 1);
}

// A `writ serve --data DIR` that must refuse to start: its exit code and stderr. A serve
// that says it is listening instead is stopped and reported as -2.
CommandRun ServeMustRefuse(const TempDir& tmp, const std::string& data) {
  const std::string err = tmp.File("refused.err");
  auto proc =
      StartWrit({"serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--data", data}, err);
  CommandRun run;
  if (!proc) return run;
  auto line = proc->ReadLine(60s);
  if (line.ok()) {  // it started
    proc->Kill(SIGTERM);
    (void)proc->Wait(60s);
    run.exit_code = -2;
  } else {
    auto code = proc->Wait(60s);
    run.exit_code = code.ok() ? *code : -1;
  }
  run.err = ReadAllOf(err);
  return run;
}

void Sql(const std::string& db, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(h);
}

// A data directory holding one retained delivery `id` of `bytes` bytes; the serve stopped.
void OneRetained(const TempDir& tmp, const std::string& data, const std::string& id,
                 const std::string& retention, uint64_t bytes = 1 << 20) {
  WritePatternFile(tmp.File(id), 7, bytes);
  auto serve = StartOn(data);
  ASSERT_TRUE(serve);
  CommandRun sent = Send(serve->address(), tmp.File(id), id, retention);
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(serve->Stop(), 0);
}

std::string OnlyPayload(const std::string& data) {
  auto files = FilesIn(data + "/payloads");
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? "" : files[0];
}

TEST(DataDirectory, AMissingIndexStopsTheServeWithExit6AndKeepsEveryPayload) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "kept-1", "power-loss"));
  const std::string payload = OnlyPayload(data);
  fs::remove(data + "/index.db");
  fs::remove(data + "/index.db-wal");
  fs::remove(data + "/index.db-shm");
  CommandRun run = ServeMustRefuse(tmp, data);
  EXPECT_EQ(run.exit_code, 6) << run.err;
  EXPECT_NE(run.err.find("index.db is missing"), std::string::npos) << run.err;
  EXPECT_TRUE(fs::exists(payload)) << "the payload must not be deleted as an orphan";
}

TEST(DataDirectory, AMissingPayloadDirectoryStopsTheServeAndDropsNoRow) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "kept-2", "power-loss"));
  fs::rename(data + "/payloads", tmp.File("payloads.away"));
  CommandRun run = ServeMustRefuse(tmp, data);
  EXPECT_EQ(run.exit_code, 6) << run.err;
  EXPECT_NE(run.err.find("payloads is missing"), std::string::npos) << run.err;
  // The operator puts it back: the delivery is still retained, bytes and all.
  fs::rename(tmp.File("payloads.away"), data + "/payloads");
  auto serve = StartOn(data);
  ASSERT_TRUE(serve);
  CommandRun q = RunWrit({"query", "kept-2", "--to", serve->address(), "--json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  CommandRun cat = RunWrit({"store", "cat", "kept-2", "--data", data});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == ReadAllOf(tmp.File("kept-2")));
}

TEST(DataDirectory, AnEmptyDirectoryIsInitialisedOnFirstStart) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  fs::create_directories(data);
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "fresh-1", "process-restart"));
  EXPECT_TRUE(fs::exists(data + "/index.db"));
  EXPECT_EQ(FilesIn(data + "/payloads").size(), 1u);
}

// Waits (inotify, an event) until a file is created in `dir`.
bool WaitForCreate(const std::string& dir, std::chrono::milliseconds timeout) {
  const int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0) return false;
  const int wd = inotify_add_watch(fd, dir.c_str(), IN_CREATE);
  bool created = wd >= 0 && !FilesIn(dir).empty();
  if (wd >= 0 && !created) {
    pollfd p{fd, POLLIN, 0};
    created = poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }
  close(fd);
  return created;
}

TEST(DataDirectory, ASecondServeIsRefusedWhileTheFirstsDeliveryInFlightSucceeds) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  auto first = StartOn(data);
  ASSERT_TRUE(first);
  WritePatternFile(tmp.File("big"), 11, 512ull << 20);
  auto sender = StartWrit({"send", tmp.File("big"), "--to", first->address(), "--id", "big-1",
                           "--retention", "power-loss", "--chunk-size", "1MiB", "--json"},
                          tmp.File("send.err"));
  ASSERT_TRUE(sender);
  ASSERT_TRUE(WaitForCreate(data + "/payloads", 120s)) << "the delivery never began";
  CommandRun second = ServeMustRefuse(tmp, data);
  EXPECT_EQ(second.exit_code, 6) << second.err;
  EXPECT_NE(second.err.find("in use by another writ process"), std::string::npos) << second.err;
  // A writing store command is refused too; reading ones work.
  CommandRun purge = RunWrit({"store", "quarantine", "purge", "--data", data});
  EXPECT_EQ(purge.exit_code, 6) << purge.err;
  CommandRun ls = RunWrit({"store", "ls", "--data", data});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  CommandRun sent = FinishWrit(*sender, tmp.File("send.err"));
  EXPECT_EQ(sent.exit_code, 0) << "the first serve's delivery must succeed undisturbed\n"
                               << sent.err;
  CommandRun check = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(DataDirectory, APayloadDamagedInPlaceIsNotReportedRetainedAndAResendMovesTheBytes) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "torn-1", "power-loss"));
  auto serve = StartOn(data, {"--scrub-rate", "0"});
  ASSERT_TRUE(serve);
  CorruptInPlace(OnlyPayload(data));
  CommandRun q = RunWrit({"query", "torn-1", "--to", serve->address(), "--json"});
  EXPECT_EQ(q.exit_code, 1) << "damaged bytes must not be reported retained: " << q.out;
  auto logged = serve->ReadLineStartingWith("writ: store: delivery torn-1", 60s);
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_NE(logged->find("quarantined"), std::string::npos) << *logged;
  CommandRun again = Send(serve->address(), tmp.File("torn-1"), "torn-1", "power-loss");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(again.json.value("bytes_moved", false)) << "a re-send must move the bytes again";
  CommandRun cat = RunWrit({"store", "cat", "torn-1", "--data", data});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == ReadAllOf(tmp.File("torn-1")));
  CommandRun quarantined = RunWrit({"store", "quarantine", "ls", "--data", data, "--json"});
  ASSERT_EQ(quarantined.exit_code, 0) << quarantined.err;
  EXPECT_EQ(quarantined.json["quarantined"].size(), 1u) << quarantined.out;
}

TEST(DataDirectory, TheScrubQuarantinesADamagedPayloadAndPurgeWaitsForTheLock) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "rot-1", "power-loss"));
  CorruptInPlace(OnlyPayload(data));  // power-loss: recovery checks only its size
  auto serve = StartOn(data, {"--scrub-rate", "64MiB"});
  ASSERT_TRUE(serve);
  auto logged = serve->ReadLineStartingWith("writ: store: delivery rot-1", 120s);
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_NE(logged->find("the scrub found"), std::string::npos) << *logged;
  CommandRun ls = RunWrit({"store", "ls", "--data", data, "--json"});
  EXPECT_EQ(ls.json["deliveries"].size(), 0u) << ls.out;
  CommandRun q = RunWrit({"store", "quarantine", "ls", "--data", data, "--json"});
  ASSERT_EQ(q.json["quarantined"].size(), 1u) << q.out;
  EXPECT_NE(q.json["quarantined"][0].value("why", "").find("rot-1"), std::string::npos);
  EXPECT_EQ(RunWrit({"store", "quarantine", "purge", "--data", data}).exit_code, 6);
  EXPECT_EQ(serve->Stop(), 0);
  CommandRun purged = RunWrit({"store", "quarantine", "purge", "--data", data});
  EXPECT_EQ(purged.exit_code, 0) << purged.err;
  q = RunWrit({"store", "quarantine", "ls", "--data", data, "--json"});
  EXPECT_EQ(q.json["quarantined"].size(), 0u) << q.out;
}

TEST(DataDirectory, RecoveryQuarantinesWhatItCannotExplainInsteadOfDeletingIt) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "pr-1", "process-restart"));
  const std::string payload = OnlyPayload(data);
  CorruptInPlace(payload);  // process-restart: recovery re-hashes it
  {
    std::ofstream stray(data + "/payloads/p00000000000000ff.dat");
    stray << "a file no row names";
  }
  auto serve = StartOn(data);
  ASSERT_TRUE(serve);
  EXPECT_EQ(serve->Stop(), 0);
  const std::string q = data + "/quarantine/";
  EXPECT_TRUE(fs::exists(q + fs::path(payload).filename().string())) << "corrupt: quarantined";
  EXPECT_TRUE(fs::exists(q + "p00000000000000ff.dat")) << "unexplained: quarantined";
  EXPECT_EQ(ReadAllOf(q + "p00000000000000ff.dat"), "a file no row names");
}

TEST(DataDirectory, StoreCheckComparesEveryRowWithItsSignedReceipts) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "signed-1", "power-loss"));
  EXPECT_EQ(RunWrit({"store", "check", "--data", data}).exit_code, 0);
  // The receipts now claim another delivery id: the bytes still match the row's digest.
  Sql(data + "/index.db",
      "UPDATE deliveries SET receipts = replace(receipts, 'signed-1', 'signed-2')");
  CommandRun check = RunWrit({"store", "check", "--data", data, "--json"});
  EXPECT_EQ(check.exit_code, 5) << check.out << check.err;
  EXPECT_NE(check.out.find("is about signed-2"), std::string::npos) << check.out;
}

TEST(DataDirectory, StoreCatNeverReadsOutsideTheDataDirectory) {
  TempDir tmp;
  const std::string data = tmp.File("data");
  ASSERT_NO_FATAL_FAILURE(OneRetained(tmp, data, "cat-1", "power-loss", 16));
  {
    std::ofstream secret(tmp.File("secret"));
    for (int i = 0; i < 100; ++i) secret << "SECRET-OUTSIDE-THE-DATA-DIRECTORY\n";
  }
  const std::string payload = OnlyPayload(data);
  // A payload replaced by a symbolic link to a file outside.
  fs::remove(payload);
  fs::create_symlink(tmp.File("secret"), payload);
  CommandRun cat = RunWrit({"store", "cat", "cat-1", "--data", data});
  EXPECT_NE(cat.exit_code, 0);
  EXPECT_EQ(cat.out.find("SECRET"), std::string::npos) << "followed a symbolic link";
  // An index row naming a path outside.
  Sql(data + "/index.db", "UPDATE deliveries SET location = '../secret'");
  cat = RunWrit({"store", "cat", "cat-1", "--data", data});
  EXPECT_NE(cat.exit_code, 0);
  EXPECT_EQ(cat.out.find("SECRET"), std::string::npos) << "read outside DIR/payloads";
}

}  // namespace
}  // namespace writ::testing
