// ProviderInfo probes completion levels lazily: whatever order Grant and
// supported_levels are asked in, the answers are those of probing every level.
#include <gtest/gtest.h>

#include "fabric/provider.h"
#include "requirement.h"

namespace writ::fabric {
namespace {

Result<ProviderInfo> Discover(const std::string& provider) {
  ProviderRequest request;
  request.provider = provider;
  request.role = Role::kTarget;
  request.node = "127.0.0.1";
  request.service = "0";
  return ProviderInfo::Discover(request);
}

// The strongest supported level not above `wanted`, from the full list.
CompletionLevel Expected(const std::vector<CompletionLevel>& supported, CompletionLevel wanted) {
  CompletionLevel granted = CompletionLevel::kProviderDefault;
  for (CompletionLevel level : supported) {
    if (level <= wanted) granted = level;
  }
  return granted;
}

class ProviderLevels : public ::testing::TestWithParam<std::string> {};

TEST_P(ProviderLevels, LazyGrantMatchesTheFullProbe) {
  auto full = Discover(GetParam());
  REQUIRE_OR_FAIL(full.ok(), full.status().ToString());
  const std::vector<CompletionLevel> supported = full->supported_levels();
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.front(), CompletionLevel::kProviderDefault);
  EXPECT_TRUE(std::is_sorted(supported.begin(), supported.end()));
  // tcp and shm accept every level in fi_getinfo (libfabric 1.17).
  EXPECT_EQ(supported.size(), 4u);

  for (CompletionLevel wanted : {CompletionLevel::kDelivery, CompletionLevel::kTransmit,
                                 CompletionLevel::kInject, CompletionLevel::kProviderDefault}) {
    auto fresh = Discover(GetParam());  // nothing probed yet
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(fresh->Grant(wanted), Expected(supported, wanted))
        << "wanted " << CompletionLevelName(wanted);
    EXPECT_EQ(fresh->Grant(wanted), Expected(supported, wanted)) << "second ask, cached";
    EXPECT_EQ(fresh->supported_levels(), supported);
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, ProviderLevels, ::testing::Values("tcp", "shm", "tcp;ofi_rxm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

}  // namespace
}  // namespace writ::fabric
