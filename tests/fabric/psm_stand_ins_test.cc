// The PSM stand-ins (src/fabric/psm_stand_ins.h): a library that does not load with them
// loads without them, they are closed again then, and a process that did not enable them
// (one embedding libwrit or the Python module) never gets them. Each case runs in a child
// process: what the dynamic linker has loaded cannot be undone within one.
#include "fabric/psm_stand_ins.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace writ::fabric {
namespace {

std::string OwnMaps() {
  std::ifstream in("/proc/self/maps");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `check` in a child; its exit status 0 is a pass, else the number of the failed step.
int InChild(const std::function<int()>& check) {
  const pid_t pid = fork();
  if (pid == 0) _exit(check());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(PsmStandIns, ALibraryThatNeedsMoreThanTheyExportLoadsWithoutThem) {
  EXPECT_EQ(InChild([] {
              EnablePsmStandIns();
              const LoadedLibrary loaded = LoadWithPsmStandIns(NEEDS_NEWER_PSM2);
              if (loaded.handle == nullptr) return 1;  // the fallback failed too
              if (loaded.with_stand_ins) return 2;
              if (loaded.note.find("loaded with the real PSM libraries") == std::string::npos)
                return 3;
              const std::string maps = OwnMaps();
              if (maps.find("writ-psm-stand-in") != std::string::npos) return 4;  // not closed
              if (maps.find("/libpsm2.so.2") == std::string::npos) return 5;      // the real one
              return 0;
            }),
            0);
}

TEST(PsmStandIns, ALibraryTheyCoverLoadsWithThem) {
  EXPECT_EQ(InChild([] {
              EnablePsmStandIns();
              const LoadedLibrary loaded = LoadWithPsmStandIns(NEEDS_KNOWN_PSM2);
              if (loaded.handle == nullptr) return 1;
              if (!loaded.with_stand_ins) return 2;
              const std::string maps = OwnMaps();
              if (maps.find("writ-psm-stand-in:libpsm2.so.2") == std::string::npos) return 3;
              if (maps.find("/libpsm2.so.2") != std::string::npos) return 4;
              return 0;
            }),
            0);
}

// What libwrit and the Python module do: they never enable them.
TEST(PsmStandIns, AProcessThatDidNotEnableThemNeverGetsThem) {
  EXPECT_EQ(InChild([] {
              const LoadedLibrary loaded = LoadWithPsmStandIns("libfabric.so.1");
              if (loaded.handle == nullptr) return 1;
              if (loaded.with_stand_ins) return 2;
              if (OwnMaps().find("writ-psm-stand-in") != std::string::npos) return 3;
              return 0;
            }),
            0);
}

}  // namespace
}  // namespace writ::fabric
