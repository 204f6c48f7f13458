// Driving a powercut_fs daemon (powercut_fs/powercut_fs.cc) from a test:
// mount, cut the power, unmount the dead mount, mount again on the same state.
#pragma once

#include <memory>
#include <string>

#include "child_process.h"

namespace writ::testing::faults {

std::string PowercutFsBinary();

class PowerCutFs {
 public:
  // Mounts `state_dir` at `mountpoint` (created if missing). Null, with *why set, when this
  // machine cannot mount FUSE file systems (no /dev/fuse, not permitted).
  static std::unique_ptr<PowerCutFs> Mount(const std::string& state_dir,
                                           const std::string& mountpoint, std::string* why,
                                           const std::string& extra_option = "");
  ~PowerCutFs();
  const std::string& mountpoint() const { return mountpoint_; }

  // Cuts the power: everything not made durable is discarded and the daemon is gone at once.
  // Returns the daemon's "discarded ..." summary; *bytes gets the unsynced bytes dropped.
  std::string Cut(uint64_t* bytes = nullptr);
  // Makes everything durable (like sync(1)).
  void Sync();
  // Detaches the (dead or live) mount; a live daemon is stopped cleanly first.
  void Unmount();

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string mountpoint_;
  bool alive_ = false;
  bool mounted_ = false;
};

}  // namespace writ::testing::faults
