#include "powercut_control.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace writ::testing::faults {

using namespace std::chrono_literals;

std::string PowercutFsBinary() { return POWERCUT_FS_BINARY; }

std::unique_ptr<PowerCutFs> PowerCutFs::Mount(const std::string& state_dir,
                                              const std::string& mountpoint, std::string* why,
                                              const std::string& extra_option) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    *why = "/dev/fuse is not available";
    return nullptr;
  }
  ::mkdir(mountpoint.c_str(), 0755);
  std::vector<std::string> argv = {PowercutFsBinary(), "--state=" + state_dir, mountpoint};
  if (!extra_option.empty()) argv.insert(argv.begin() + 1, extra_option);
  auto proc = ChildProcess::Start(argv, /*merge_stderr=*/true);
  if (!proc.ok()) {
    *why = proc.status().ToString();
    return nullptr;
  }
  auto fs = std::unique_ptr<PowerCutFs>(new PowerCutFs());
  fs->proc_ = std::make_unique<ChildProcess>(std::move(proc).value());
  fs->mountpoint_ = mountpoint;
  auto line = fs->proc_->ReadLineStartingWith("powercut_fs: mounted", 30s);
  if (!line.ok()) {
    *why = "powercut_fs did not mount: " + line.status().message();
    fs->proc_->Kill(SIGKILL);
    (void)fs->proc_->Wait(10s);
    ::umount2(mountpoint.c_str(), MNT_DETACH);
    return nullptr;
  }
  fs->alive_ = true;
  fs->mounted_ = true;
  return fs;
}

PowerCutFs::~PowerCutFs() { Unmount(); }

std::string PowerCutFs::Cut(uint64_t* bytes) {
  if (!alive_) return "";
  EXPECT_TRUE(proc_->WriteLine("cut").ok());
  auto line = proc_->ReadLineStartingWith("cut: ", 60s);
  EXPECT_TRUE(line.ok()) << line.status().ToString();
  auto code = proc_->Wait(60s);
  EXPECT_TRUE(code.ok() && *code == 0) << "the daemon exits at the cut";
  alive_ = false;
  if (!line.ok()) return "";
  if (bytes != nullptr) {
    const std::string key = "cut: discarded ";
    *bytes = std::strtoull(line->c_str() + key.size(), nullptr, 10);
  }
  return *line;
}

void PowerCutFs::Sync() {
  if (!alive_) return;
  EXPECT_TRUE(proc_->WriteLine("sync").ok());
  auto line = proc_->ReadLineStartingWith("synced", 60s);
  EXPECT_TRUE(line.ok()) << line.status().ToString();
}

void PowerCutFs::Unmount() {
  if (alive_) {
    // A clean stop: the daemon syncs everything and unmounts.
    proc_->Kill(SIGTERM);
    (void)proc_->Wait(60s);
    alive_ = false;
  }
  if (mounted_) {
    ::umount2(mountpoint_.c_str(), MNT_DETACH);  // a dead mount stays until detached
    mounted_ = false;
  }
}

}  // namespace writ::testing::faults
