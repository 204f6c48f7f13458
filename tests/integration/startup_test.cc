// Start-up of processes that load libfabric: the PSM libraries Debian's libfabric names
// as dependencies (their constructors calibrate a clock with sleeps) are met by writ's
// stand-ins and never loaded (src/fabric/psm_stand_ins.h), in a `writ serve` and in a
// process using the library.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "fabric/libfabric_api.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

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

TEST(Startup, LibraryLoadsLibfabricWithoutTheRealPsmLibraries) {
  auto api = fabric::Libfabric();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  const std::string maps = MapsOf("self");
  EXPECT_NE(maps.find("writ-psm-stand-in:libpsm2.so.2"), std::string::npos) << maps;
  ExpectNoRealPsm(maps);
}

}  // namespace
}  // namespace writ::testing
