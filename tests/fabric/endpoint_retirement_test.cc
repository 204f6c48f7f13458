// A target serves senders that come and go: the endpoint and completion queue of a
// connection whose peer left are released, so a long-running receiver neither slows down
// (polling dead endpoints) nor runs out of descriptors.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "fabric/node.h"
#include "fabric/progress_loop.h"
#include "requirement.h"
#include "tcp_loopback.h"

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
  auto target = FabricNode::Open(LoopbackTcpTarget());
  REQUIRE_OR_FAIL(target.ok(),
                  "the tcp provider cannot serve here: " << target.status().ToString());
  ProgressLoop loop(**target, [](const WorkCompletion&) {});
  auto address = (*target)->LocalAddressText();
  ASSERT_TRUE(address.ok());

  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("sender " + std::to_string(i));
    auto init = FabricNode::Open(LoopbackTcpInitiator(*address));
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
