// A target serves senders that come and go: the endpoint and completion queue of a
// connection whose peer left are released, so a long-running receiver neither slows down
// (polling dead endpoints) nor runs out of descriptors.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "fabric/node.h"
#include "fabric/progress_loop.h"

namespace writ::fabric {
namespace {

using namespace std::chrono_literals;

// Polls `done` until it holds or five seconds pass.
template <typename Predicate>
bool Eventually(Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(TargetEndpoints, AConnectionWhosePeerLeftIsReleased) {
  NodeOptions target_options;
  target_options.provider.provider = "tcp";
  target_options.provider.role = Role::kTarget;
  target_options.provider.node = "127.0.0.1";
  target_options.provider.service = "0";
  auto target = FabricNode::Open(target_options);
  if (!target.ok())
    GTEST_SKIP() << "the tcp provider cannot serve here: " << target.status().ToString();
  ProgressLoop loop(**target, [](const WorkCompletion&) {});
  auto address = (*target)->LocalAddressText();
  ASSERT_TRUE(address.ok());

  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("sender " + std::to_string(i));
    NodeOptions init_options;
    init_options.provider.provider = "tcp";
    init_options.provider.role = Role::kInitiator;
    init_options.provider.node = address->substr(0, address->rfind(':'));
    init_options.provider.service = address->substr(address->rfind(':') + 1);
    auto init = FabricNode::Open(init_options);
    ASSERT_TRUE(init.ok()) << init.status().ToString();
    ASSERT_TRUE((*init)->Connect(10s).ok());
    ASSERT_TRUE(Eventually([&] { return (*target)->live_endpoints() == 1; }))
        << "the target accepted the connection";
    ASSERT_TRUE((*init)->Close().ok());
    init->reset();
    EXPECT_TRUE(Eventually([&] { return (*target)->live_endpoints() == 0; }))
        << (*target)->live_endpoints() << " endpoint(s) still open after the peer left";
  }
  loop.Stop();
  EXPECT_TRUE((*target)->Close().ok());
}

}  // namespace
}  // namespace writ::fabric
