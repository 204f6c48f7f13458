// A really full disk under the real receiver: its data directory on a small
// tmpfs. Filling it gives exit 6 and loses nothing already receipted, whether
// the delivery is refused at admission or runs out of space while being
// written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fault_harness.h"
#include "requirement.h"

namespace writ::testing::faults {
namespace {

class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& path, const std::string& size) : path_(path) {
    std::filesystem::create_directories(path);
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0) {
      mounted_ = true;
    } else {
      why_ = std::strerror(errno);
    }
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_, why_;
  bool mounted_ = false;
};

struct Sent {
  std::string id, file;
};

void ExpectIntact(const std::string& address, const std::string& data,
                  const std::vector<Sent>& sent) {
  for (const Sent& s : sent) {
    CommandRun q = RunWrit({"query", s.id, "--to", address});
    EXPECT_EQ(q.exit_code, 0) << s.id << ": " << q.err;
    CommandRun cat = RunWrit({"store", "cat", s.id, "--data", data});
    EXPECT_EQ(cat.exit_code, 0) << cat.err;
    EXPECT_TRUE(cat.out == ReadFile(s.file)) << s.id << ": identical bytes";
  }
  CommandRun check = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(DiskFull, DeliveriesThatNoLongerFitExitSixAndNothingReceiptedIsLost) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  SmallTmpfs fs(dir.File("mnt"), "24m");
  REQUIRE_OR_FAIL(fs.mounted(), "cannot mount a tmpfs here (needs root): " << fs.why());
  const std::string data = dir.File("mnt") + "/data";
  const std::vector<std::string> extra = {"--identity", dir.File("identity")};
  auto receiver = Receiver::Start(data, dir.File("serve.err"), extra);
  ASSERT_TRUE(receiver);

  // Refused at admission, before a byte moves, once a delivery no longer fits.
  std::vector<Sent> receipted;
  bool refused = false;
  for (int i = 0; i < 20 && !refused; ++i) {
    const Sent s{"full-" + std::to_string(i), dir.File("f" + std::to_string(i))};
    WritePatternFile(s.file, 100 + static_cast<uint64_t>(i), 3 << 20);
    const std::string retention = i % 2 ? "process-restart" : "power-loss";
    CommandRun run = RunWrit({"send", s.file, "--to", receiver->address(), "--id", s.id,
                              "--retention", retention, "--chunk-size", "1MiB"});
    if (run.exit_code == 0) {
      receipted.push_back(s);
      continue;
    }
    refused = true;
    EXPECT_EQ(run.exit_code, 6) << run.err;
    EXPECT_NE(run.err.find("disk full"), std::string::npos) << run.err;
  }
  ASSERT_TRUE(refused) << "24 MiB never filled up";
  EXPECT_GE(receipted.size(), 4u);
  ExpectIntact(receiver->address(), data, receipted);
  EXPECT_EQ(receiver->Stop(), 0);

  receiver = Receiver::Start(data, dir.File("serve-again.err"), extra);
  ASSERT_TRUE(receiver);
  const Receiver::Recovery rec = receiver->ParseRecovery();
  EXPECT_EQ(rec.retained, receipted.size());
  EXPECT_EQ(rec.corrupt, 0u);
  ExpectIntact(receiver->address(), data, receipted);
  EXPECT_EQ(receiver->Stop(), 0);
}

TEST(DiskFull, RunningOutOfSpaceWhileWritingExitsSixAndIsNotSticky) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  SmallTmpfs fs(dir.File("mnt"), "160m");
  REQUIRE_OR_FAIL(fs.mounted(), "cannot mount a tmpfs here (needs root): " << fs.why());
  const std::string data = dir.File("mnt") + "/data";
  const std::vector<std::string> extra = {"--identity", dir.File("identity")};
  auto receiver = Receiver::Start(data, dir.File("serve.err"), extra);
  ASSERT_TRUE(receiver);
  std::vector<Sent> kept;
  for (int i = 0; i < 2; ++i) {
    const Sent s{"kept-" + std::to_string(i), dir.File("k" + std::to_string(i))};
    WritePatternFile(s.file, 200 + static_cast<uint64_t>(i), 2 << 20);
    CommandRun run =
        RunWrit({"send", s.file, "--to", receiver->address(), "--id", s.id, "--retention",
                 i ? "process-restart" : "power-loss", "--chunk-size", "1MiB"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    kept.push_back(s);
  }

  // Admitted while there is room; then the rest of the disk is taken (as another program
  // would) the moment the delivery's payload file appears -- inotify says when -- with one
  // fallocate, while the delivery is still arriving in 64 KiB chunks. Should the delivery
  // still win that race it is simply retained (and checked); the test tries again.
  const std::string big = dir.File("big");
  WritePatternFile(big, 7, 24 << 20);
  const std::string filler = dir.File("mnt") + "/filler";
  bool ran_out = false;
  for (int attempt = 0; attempt < 5 && !ran_out; ++attempt) {
    const std::string id = "big-" + std::to_string(attempt);
    const int watch = inotify_init1(IN_CLOEXEC);
    ASSERT_GE(watch, 0);
    ASSERT_GE(inotify_add_watch(watch, (data + "/payloads").c_str(), IN_CREATE), 0);
    const std::string err_path = dir.File(id + ".err");
    auto sender = StartWrit({"send", big, "--to", receiver->address(), "--id", id, "--retention",
                             "power-loss", "--chunk-size", "64KiB", "--depth", "1"},
                            err_path);
    ASSERT_TRUE(sender);
    alignas(inotify_event) char buf[4096];
    ASSERT_GT(read(watch, buf, sizeof buf), 0);  // blocks until the payload file is created
    close(watch);
    const int fd = ::open(filler.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    struct statvfs st {};
    ASSERT_EQ(::fstatvfs(fd, &st), 0);
    (void)::fallocate(fd, 0, 0, static_cast<off_t>(st.f_bavail * st.f_frsize));
    std::vector<char> block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
    CommandRun run = FinishWrit(*sender, err_path);
    if (run.exit_code == 0) {
      std::cout << "attempt " << attempt << ": the delivery was complete before the disk filled"
                << std::endl;
      kept.push_back(Sent{id, big});
      ASSERT_EQ(::unlink(filler.c_str()), 0);
      continue;
    }
    ran_out = true;
    EXPECT_EQ(run.exit_code, 6) << run.err;
    // Named by the payload's write (ENOSPC); or, when the payload was already written,
    // by the index commit (SQLite: "database or disk is full"); or, when the filler won
    // before the next window was promised disk, by the store's own check ("disk full:
    // ... needs N more bytes for its next window ... has M bytes free").
    EXPECT_TRUE(run.err.find("ENOSPC") != std::string::npos ||
                run.err.find("disk is full") != std::string::npos ||
                run.err.find("disk full: delivery " + id + " needs") != std::string::npos)
        << run.err;
    CommandRun q = RunWrit({"query", id, "--to", receiver->address()});
    EXPECT_EQ(q.exit_code, 1) << "never reported retained";
  }
  ASSERT_TRUE(ran_out) << "five attempts without the exit 6 of a disk filling mid-delivery";
  ExpectIntact(receiver->address(), data, kept);

  // Space again: a full disk is not sticky; the same delivery now goes through.
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  CommandRun again = RunWrit({"send", big, "--to", receiver->address(), "--id", "big",
                              "--retention", "power-loss", "--chunk-size", "1MiB"});
  kept.push_back(Sent{"big", big});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(receiver->Stop(), 0);

  receiver = Receiver::Start(data, dir.File("serve-again.err"), extra);
  ASSERT_TRUE(receiver);
  const Receiver::Recovery rec = receiver->ParseRecovery();
  EXPECT_EQ(rec.retained, kept.size());
  EXPECT_EQ(rec.corrupt, 0u);
  ExpectIntact(receiver->address(), data, kept);
  EXPECT_EQ(receiver->Stop(), 0);
}

}  // namespace
}  // namespace writ::testing::faults
