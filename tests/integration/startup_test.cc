// Start-up of processes that load libfabric: the PSM libraries Debian's libfabric names
// as dependencies (their constructors calibrate a clock with sleeps) are met by writ's
// stand-ins and never loaded (src/fabric/psm_stand_ins.h) in a `writ serve`; a process
// using the library loads libfabric as built.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "fabric/libfabric_api.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::string MapsOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/maps");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The real libraries' file names, as /proc/PID/maps shows them.
void ExpectNoRealPsm(const std::string& maps) {
  EXPECT_EQ(maps.find("libinfinipath.so"), std::string::npos) << maps;
  EXPECT_EQ(maps.find("/libpsm_infinipath.so"), std::string::npos) << maps;
  EXPECT_EQ(maps.find("/libpsm2.so"), std::string::npos) << maps;
}

TEST(Startup, ServeLoadsThePsmStandInsNotTheRealLibraries) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  auto serve = Serve::Start("tcp");
  ASSERT_TRUE(serve);
  const std::string maps = MapsOf(std::to_string(serve->process().pid()));
  EXPECT_NE(maps.find("libfabric.so"), std::string::npos) << "the serve opened no fabric";
  EXPECT_NE(maps.find("writ-psm-stand-in:libpsm_infinipath.so.1"), std::string::npos) << maps;
  EXPECT_NE(maps.find("writ-psm-stand-in:libpsm2.so.2"), std::string::npos) << maps;
  ExpectNoRealPsm(maps);
  EXPECT_EQ(serve->Stop(), 0);
}

// A process using the library did not enable the stand-ins: libfabric loads as built,
// so the PSM libraries of anything else in the process are the real ones.
TEST(Startup, ALibraryProcessLoadsLibfabricWithoutTheStandIns) {
  auto api = fabric::Libfabric();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  const std::string maps = MapsOf("self");
  EXPECT_EQ(maps.find("writ-psm-stand-in"), std::string::npos) << maps;
}

// libfabric 1.17's verbs provider scans /proc/kallsyms at initialisation (its peer-memory
// and dma-buf checks); the `writ` program's fopen (tools/writ/kallsyms_skip.cc) answers
// ENOENT for that path. Control: libfabric's own fi_info, without the override, opens it.
int KallsymsOpens(const std::vector<std::string>& command, const std::string& trace) {
  std::vector<std::string> argv = {"/usr/bin/strace", "-f", "-e", "trace=open,openat", "-o", trace};
  argv.insert(argv.end(), command.begin(), command.end());
  auto proc = ChildProcess::Start(argv, true);
  if (!proc.ok()) return -1;
  (void)proc->ReadAll(60s);
  (void)proc->Wait(60s);
  std::ifstream in(trace);
  int opens = 0;
  for (std::string line; std::getline(in, line);)
    opens += line.find("/proc/kallsyms") != std::string::npos;
  return opens;
}

TEST(Startup, TheWritProgramNeverScansKallsyms) {
  REQUIRE_OR_FAIL(access("/usr/bin/strace", X_OK) == 0,
                  "strace is missing (Debian package strace)");
  REQUIRE_OR_FAIL(access("/usr/bin/fi_info", X_OK) == 0,
                  "fi_info is missing (Debian package libfabric-bin)");
  TempDir dir;
  const int control = KallsymsOpens({"/usr/bin/fi_info", "-p", "tcp"}, dir.File("fi_info.trace"));
  ASSERT_GE(control, 0) << "strace did not run";
  if (control == 0) GTEST_SKIP() << "this libfabric does not scan /proc/kallsyms: nothing to skip";
  EXPECT_EQ(KallsymsOpens({WritBinary(), "providers"}, dir.File("writ.trace")), 0)
      << "fi_info opened /proc/kallsyms " << control << " time(s); writ must not";
}

}  // namespace
}  // namespace writ::testing
