// Where FabricNode::can_wait() holds (tcp), a target may block in poll() on the
// descriptors PrepareWait hands out instead of spinning: they must wake for a peer's
// incoming write-with-data, and for an endpoint opened while the caller waits.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "fabric/node.h"
#include "requirement.h"
#include "tcp_loopback.h"

namespace writ::fabric {
namespace {

using namespace std::chrono_literals;

// Polls until PrepareWait agrees that nothing is pending, and returns its descriptors.
std::vector<pollfd> DrainAndPrepare(FabricNode& node, std::vector<WorkCompletion>& seen) {
  std::vector<pollfd> fds;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto polled = node.Poll(seen);
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    auto prepared = node.PrepareWait(fds);
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    if (prepared.ok() && *prepared) return fds;
  }
  ADD_FAILURE() << "fi_trywait never let the node block";
  return {};
}

int WaitReadable(std::vector<pollfd>& fds, std::chrono::milliseconds timeout) {
  return poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
}

TEST(WaitObjects, TcpTargetWakesForAnEndpointAndForAnIncomingWrite) {
  auto target = FabricNode::Open(LoopbackTcpTarget());
  REQUIRE_OR_FAIL(target.ok(),
                  "the tcp provider cannot serve here: " << target.status().ToString());
  ASSERT_TRUE((*target)->can_wait()) << "tcp completion queues are opened with FI_WAIT_FD";
  auto address = (*target)->LocalAddressText();
  ASSERT_TRUE(address.ok());
  std::vector<WorkCompletion> seen;

  // Before anyone connects: the event queue and the endpoint-set descriptor.
  std::vector<pollfd> fds = DrainAndPrepare(**target, seen);
  ASSERT_FALSE(fds.empty());
  ASSERT_EQ(WaitReadable(fds, 0ms), 0) << "nothing has happened yet";

  auto init = FabricNode::Open(LoopbackTcpInitiator(*address));
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  auto connected = std::async(std::launch::async, [&] { return (*init)->Connect(10s); });
  EXPECT_GT(WaitReadable(fds, 10s), 0) << "a connection request wakes the waiting target";
  auto accepted = (*target)->Accept(10s);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  auto peer = connected.get();
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();

  std::vector<uint8_t> window(4096), source(4096, 0x5A);
  auto window_region = (*target)->Register(window.data(), window.size(), Access::kRemoteWrite);
  auto source_region = (*init)->Register(source.data(), source.size(), Access::kLocalSource);
  ASSERT_TRUE(window_region.ok() && source_region.ok());

  fds = DrainAndPrepare(**target, seen);
  ASSERT_FALSE(fds.empty());
  WriteRequest write;
  write.request_id = 1;
  write.peer = *peer;
  write.local = &*source_region;
  write.length = source.size();
  write.remote = window_region->descriptor();
  write.remote_data = 0x00070001;
  ASSERT_TRUE((*init)->PostWrite(write).ok());

  EXPECT_GT(WaitReadable(fds, 10s), 0) << "the incoming write wakes the waiting target";
  std::optional<uint64_t> notified;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!notified && std::chrono::steady_clock::now() < deadline) {
    std::vector<WorkCompletion> target_records, init_records;
    ASSERT_TRUE((*target)->Poll(target_records).ok());
    ASSERT_TRUE((*init)->Poll(init_records).ok());  // the initiator's own progress
    for (const auto& record : target_records) {
      if (auto data = record.remote_data(); data.ok()) notified = *data;
    }
  }
  ASSERT_TRUE(notified.has_value()) << "the write's notification arrived";
  EXPECT_EQ(*notified, 0x00070001u);
  EXPECT_EQ(window, source);
}

TEST(WaitObjects, ShmKeepsPolling) {
  NodeOptions options;
  options.provider.provider = "shm";
  auto node = FabricNode::Open(options);
  REQUIRE_OR_FAIL(node.ok(), "the shm provider cannot open here: " << node.status().ToString());
  EXPECT_FALSE((*node)->can_wait());
  std::vector<pollfd> fds;
  auto prepared = (*node)->PrepareWait(fds);
  ASSERT_TRUE(prepared.ok());
  EXPECT_FALSE(*prepared) << "without wait objects a caller must keep polling";
}

}  // namespace
}  // namespace writ::fabric
