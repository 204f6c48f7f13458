// The power-cut file system's own test: it must really drop what was not made
// durable (and keep what was), or the power-cut test of the store proves nothing.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "powercut_control.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing::faults {
namespace {

class PowerCutFsTest : public ::testing::Test {
 protected:
  void SetUp() override { Remount(); }

  void Remount(const std::string& option = "") {
    fs_.reset();
    std::string why;
    fs_ = PowerCutFs::Mount(dir_.File("state"), dir_.File("mnt"), &why, option);
    REQUIRE_OR_FAIL(fs_, "cannot mount a FUSE file system here: " << why);
  }
  // Power cut, then a new daemon on the same state: only what was durable is left.
  void CutAndRemount() {
    cut_summary_ = fs_->Cut();
    fs_->Unmount();
    Remount();
  }
  std::string P(const std::string& name) const { return dir_.File("mnt") + "/" + name; }

  TempDir dir_;
  std::unique_ptr<PowerCutFs> fs_;
  std::string cut_summary_;
};

void Write(const std::string& path, const std::string& data, off_t offset = 0, bool sync = false,
           int flags = O_CREAT | O_WRONLY) {
  const int fd = ::open(path.c_str(), flags, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), offset), static_cast<ssize_t>(data.size()));
  if (sync) {
    ASSERT_EQ(::fdatasync(fd), 0) << std::strerror(errno);
  }
  ::close(fd);
}

void SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

void SyncDir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::fsync(fd), 0) << std::strerror(errno);
  ::close(fd);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<missing>";
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(PowerCutFsTest, UnsyncedNewFileIsGoneWithItsName) {
  Write(P("a"), "hello");
  ASSERT_EQ(Read(P("a")), "hello") << "visible before the cut";
  CutAndRemount();
  EXPECT_FALSE(Exists(P("a")));
  EXPECT_NE(cut_summary_.find("discarded 5 unsynced bytes"), std::string::npos) << cut_summary_;
}

TEST_F(PowerCutFsTest, SyncedFileWithoutDirectorySyncLosesItsName) {
  Write(P("a"), "hello", 0, /*sync=*/true);
  CutAndRemount();
  EXPECT_FALSE(Exists(P("a"))) << "the name of a new file needs an fsync of its directory";
}

TEST_F(PowerCutFsTest, DirectorySyncWithoutFileSyncKeepsAnEmptyName) {
  Write(P("a"), "hello");
  SyncDir(P(""));
  CutAndRemount();
  ASSERT_TRUE(Exists(P("a")));
  EXPECT_EQ(Read(P("a")), "") << "the name is durable, the data never was";
}

TEST_F(PowerCutFsTest, FileAndDirectorySyncSurvive) {
  Write(P("a"), "hello", 0, true);
  SyncDir(P(""));
  CutAndRemount();
  EXPECT_EQ(Read(P("a")), "hello");
}

TEST_F(PowerCutFsTest, OverwriteAndAppendWithoutSyncRevert) {
  Write(P("a"), "AAAAAAAA", 0, true);
  SyncDir(P(""));
  Write(P("a"), "BB", 2);    // overwrite, not synced
  Write(P("a"), "CCCC", 8);  // append, not synced
  ASSERT_EQ(Read(P("a")), "AABBAAAACCCC");
  CutAndRemount();
  EXPECT_EQ(Read(P("a")), "AAAAAAAA");
  Write(P("a"), "BB", 2, true);  // now synced
  Write(P("a"), "DD", 4);        // not
  CutAndRemount();
  EXPECT_EQ(Read(P("a")), "AABBAAAA");
}

TEST_F(PowerCutFsTest, RenameAndUnlinkNeedADirectorySync) {
  Write(P("a"), "one", 0, true);
  Write(P("gone"), "two", 0, true);
  SyncDir(P(""));
  ASSERT_EQ(::rename(P("a").c_str(), P("b").c_str()), 0);
  ASSERT_EQ(::unlink(P("gone").c_str()), 0);
  CutAndRemount();
  EXPECT_EQ(Read(P("a")), "one") << "the rename was never made durable";
  EXPECT_FALSE(Exists(P("b")));
  EXPECT_EQ(Read(P("gone")), "two") << "the unlink was never made durable";

  ASSERT_EQ(::rename(P("a").c_str(), P("b").c_str()), 0);
  ASSERT_EQ(::unlink(P("gone").c_str()), 0);
  SyncDir(P(""));
  CutAndRemount();
  EXPECT_FALSE(Exists(P("a")));
  EXPECT_EQ(Read(P("b")), "one");
  EXPECT_FALSE(Exists(P("gone")));
}

TEST_F(PowerCutFsTest, RenameOverAnotherFileNeedsADirectorySync) {
  Write(P("final"), "old", 0, true);
  SyncDir(P(""));
  Write(P("tmp"), "new", 0, true);
  ASSERT_EQ(::rename(P("tmp").c_str(), P("final").c_str()), 0);
  CutAndRemount();
  EXPECT_EQ(Read(P("final")), "old");
  EXPECT_FALSE(Exists(P("tmp")));
}

TEST_F(PowerCutFsTest, NewDirectoryNeedsItsParentSynced) {
  ASSERT_EQ(::mkdir(P("d").c_str(), 0755), 0);
  Write(P("d/f"), "x", 0, true);
  SyncDir(P("d"));
  CutAndRemount();
  EXPECT_FALSE(Exists(P("d"))) << "the parent of d was never synced";

  ASSERT_EQ(::mkdir(P("d").c_str(), 0755), 0);
  Write(P("d/f"), "x", 0, true);
  SyncDir(P("d"));
  SyncDir(P(""));
  CutAndRemount();
  EXPECT_EQ(Read(P("d/f")), "x");
}

TEST_F(PowerCutFsTest, TruncateThenExtendSyncsZeros) {
  Write(P("a"), "XXXXXXXX", 0, true);
  SyncDir(P(""));
  ASSERT_EQ(::truncate(P("a").c_str(), 2), 0);
  ASSERT_EQ(::truncate(P("a").c_str(), 8), 0);
  SyncFile(P("a"));
  CutAndRemount();
  EXPECT_EQ(Read(P("a")), std::string("XX") + std::string(6, '\0'));
}

TEST_F(PowerCutFsTest, ManyFilesOnlyTheDurableOnesRemain) {
  ASSERT_EQ(::mkdir(P("p").c_str(), 0755), 0);
  SyncDir(P(""));
  for (int i = 0; i < 40; ++i) {
    const std::string name = P("p/" + std::to_string(i));
    Write(name, std::string(1000 + i, static_cast<char>('a' + i % 26)), 0, i % 2 == 0);
    if (i == 29) SyncDir(P("p"));
  }
  CutAndRemount();
  for (int i = 0; i < 40; ++i) {
    const std::string name = P("p/" + std::to_string(i));
    if (i >= 30) {
      EXPECT_FALSE(Exists(name)) << i;
    } else if (i % 2 == 0) {
      EXPECT_EQ(Read(name), std::string(1000 + i, static_cast<char>('a' + i % 26))) << i;
    } else {
      EXPECT_EQ(Read(name), "") << i << ": named, never synced";
    }
  }
}

TEST_F(PowerCutFsTest, CleanUnmountSyncsEverything) {
  Write(P("a"), "kept");
  fs_->Unmount();
  Remount();
  EXPECT_EQ(Read(P("a")), "kept");
}

TEST_F(PowerCutFsTest, CapacityGivesEnospc) {
  fs_->Unmount();
  Remount("--capacity=1048576");
  struct statvfs st {};
  ASSERT_EQ(::statvfs(P("").c_str(), &st), 0);
  EXPECT_EQ(st.f_blocks * st.f_frsize, 1048576u);
  const int fd = ::open(P("big").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  std::string block(1 << 19, 'z');
  EXPECT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  EXPECT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  errno = 0;
  EXPECT_EQ(::write(fd, block.data(), block.size()), -1);
  EXPECT_EQ(errno, ENOSPC);
  ::close(fd);
}

// SQLite in WAL mode works on it (locks, the -shm mapping), and a synchronous=FULL commit
// survives a cut while the database stays consistent.
TEST_F(PowerCutFsTest, SqliteWalCommitsSurviveACut) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(P("t.db").c_str(), &db), SQLITE_OK);
  auto exec = [&](const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  };
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=FULL");
  exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)");
  exec("INSERT INTO t VALUES (1, 'durable')");
  exec("PRAGMA synchronous=OFF");
  exec("INSERT INTO t VALUES (2, 'maybe')");
  // Power cut; the handle dies with the mount (closed before the new mount exists, so its
  // last-connection cleanup cannot touch the new one).
  fs_->Cut();
  sqlite3_close(db);
  db = nullptr;
  fs_->Unmount();
  Remount();
  ASSERT_EQ(sqlite3_open(P("t.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT v FROM t WHERE k = 1", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "durable");
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

}  // namespace
}  // namespace writ::testing::faults
