#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "fabric/libfabric_api.h"

namespace writ::fabric {
namespace {

// A closed registration must not stay alive in libfabric's cache with its key
// (docs/security.md, "Registration cache"): writ turns the cache off before libfabric
// reads its parameters, whatever the environment said. In a fresh process (the
// "threadsafe" death-test style re-runs this test alone), so that libfabric loads here.
TEST(RegistrationCache, IsOffOnceLibfabricIsLoadedWhateverTheEnvironmentSaid) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("FI_MR_CACHE_MAX_COUNT", "1024", 1);  // what an operator might have set
        const bool loaded = Libfabric().ok();
        const char* count = std::getenv("FI_MR_CACHE_MAX_COUNT");
        std::exit(loaded && count != nullptr && std::strcmp(count, "0") == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace writ::fabric
