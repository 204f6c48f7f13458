// libfabric's shm provider names each endpoint's region "<pid>:<domain>:<endpoint>" in
// /dev/shm. A receiver or sender killed with SIGKILL leaves its region behind; once the
// kernel hands that pid to a new process, libfabric 1.17 refuses the new endpoint with
// FI_EBUSY (it unlinks the stale region as it does so). A node must still open.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "requirement.h"

namespace writ::fabric {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kShmPrefix = "fi_shm://";

Result<std::unique_ptr<FabricNode>> OpenShm() {
  NodeOptions options;
  options.provider.provider = "shm";
  return FabricNode::Open(options);
}

// "fi_shm://4242:0:3" -> {"4242:0:", 3}
bool SplitRegionName(const std::string& address, std::string* stem, int* index) {
  if (address.rfind(kShmPrefix, 0) != 0) return false;
  const std::string name = address.substr(kShmPrefix.size());
  const size_t colon = name.rfind(':');
  if (colon == std::string::npos) return false;
  *stem = name.substr(0, colon + 1);
  *index = std::stoi(name.substr(colon + 1));
  return true;
}

TEST(ShmStaleRegion, ARegionLeftUnderOurOwnPidDoesNotStopTheNextEndpoint) {
  auto first = OpenShm();
  REQUIRE_OR_FAIL(first.ok(), "the shm provider cannot open here: " << first.status().ToString());
  auto address = (*first)->LocalAddress();
  ASSERT_TRUE(address.ok()) << address.status().ToString();
  std::string stem;
  int index = 0;
  const std::string text(address->begin(), address->end());
  ASSERT_TRUE(SplitRegionName(text.c_str(), &stem, &index)) << "unexpected shm address " << text;

  // The region the next endpoint of this process will ask for, planted as a dead process
  // with this pid would have left it: a copy of a live, fully initialised region.
  const fs::path live = fs::path("/dev/shm") / (stem + std::to_string(index));
  const fs::path stale = fs::path("/dev/shm") / (stem + std::to_string(index + 1));
  ASSERT_TRUE(fs::exists(live)) << live;
  fs::copy_file(live, stale, fs::copy_options::overwrite_existing);

  auto second = OpenShm();
  std::error_code ignored;
  fs::remove(stale, ignored);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto second_address = (*second)->LocalAddress();
  ASSERT_TRUE(second_address.ok());
  EXPECT_NE(std::string(second_address->begin(), second_address->end()), text);
}

// The address comes from the peer, and fi_av_insert reads an shm address up to its NUL.
TEST(ShmPeers, AnAddressWithoutItsTerminatingNulIsRefusedNotRead) {
  auto node = OpenShm();
  REQUIRE_OR_FAIL(node.ok(), "the shm provider cannot open here: " << node.status().ToString());
  const std::string text = "fi_shm://4242:0:0";
  const std::vector<uint8_t> unterminated(text.begin(), text.end());
  auto refused = (*node)->AddPeer(unterminated);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("NUL-terminated"), std::string::npos);

  auto own = (*node)->LocalAddress();
  ASSERT_TRUE(own.ok());
  auto added = (*node)->AddPeer(*own);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_TRUE((*node)->RemovePeer(*added).ok());
}

}  // namespace
}  // namespace writ::fabric
