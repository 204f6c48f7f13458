// A receiver's only connection leads the fabric's progress loop (Connection::FollowOrLead,
// fabric::ProgressLoop::TryLead): its own thread reads the completion queues, so a small
// delivery's notification reaches it with no hand-off from the progress thread. A second
// connection, or a run that needs the connection's thread elsewhere (a window's chunks),
// hands the polls back to the progress thread. Who polled is read from the fabric itself
// (FaultInjectingFabric::Pollers: the threads that called Poll).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "seam_rig.h"
#include "writ/sender.h"

namespace writ::seam {
namespace {

using namespace std::chrono_literals;
using Pollers = std::map<std::thread::id, uint64_t>;

// The thread polling the receiver's queues before any connection runs: its progress thread.
std::thread::id ProgressThread(fabric::FaultInjectingFabric& target) {
  if (!target.WaitForPoller(5s)) return {};
  return target.Pollers().begin()->first;
}

// `count` small deliveries over the rig's link; the first failure's status.
Status DeliverSmall(SeamRig& rig, const std::string& prefix, int count) {
  const auto bytes = Pattern(1, 4 << 10);
  for (int i = 0; i < count; ++i) {
    const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks(prefix + std::to_string(i)));
    if (!out.status.ok()) return out.status;
  }
  return Status::Ok();
}

// Polls by `thread` while `count` small deliveries run.
uint64_t PollsDuring(SeamRig& rig, std::thread::id thread, const std::string& prefix, int count,
                     Status& delivered) {
  rig.target().ForgetPollers();
  delivered = DeliverSmall(rig, prefix, count);
  const Pollers pollers = rig.target().Pollers();
  auto it = pollers.find(thread);
  return it == pollers.end() ? 0 : it->second;
}

// Whether, within a few tries, a stretch of small deliveries ran with no poll by `progress`.
bool LeadsAgain(SeamRig& rig, std::thread::id progress, const std::string& prefix) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    Status delivered;
    const uint64_t polls =
        PollsDuring(rig, progress, prefix + std::to_string(attempt) + "-", 5, delivered);
    if (!delivered.ok()) return false;
    if (polls == 0) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Starts the rig, finds its progress thread and connects; the first delivery earns the ring.
#define START_ALONE(rig, progress)                                                    \
  SEAM_START(rig);                                                                    \
  const std::thread::id progress = ProgressThread((rig).target());                    \
  ASSERT_NE(progress, std::thread::id{}) << "the progress thread never polled";       \
  ASSERT_EQ((rig).target().Pollers().size(), 1u) << "only the progress thread polls"; \
  ASSERT_TRUE((rig).Connect(4).ok());                                                 \
  ASSERT_TRUE(DeliverSmall(rig, "warm-", 3).ok())

TEST(ReceiverProgressLead, TheOnlyConnectionReadsItsOwnCompletionsWithNoHandOff) {
  SeamRig rig("tcp");
  START_ALONE(rig, progress);
  rig.target().ForgetPollers();
  ASSERT_TRUE(DeliverSmall(rig, "small-", 20).ok());
  const Pollers pollers = rig.target().Pollers();
  EXPECT_EQ(pollers.count(progress), 0u) << "the progress thread polled " << pollers.at(progress)
                                         << " times while the only connection had small deliveries";
  EXPECT_EQ(pollers.size(), 1u) << "one thread, the connection's, read the records";
}

TEST(ReceiverProgressLead, ASecondConnectionHandsThePollsBackUntilItEnds) {
  SeamRig rig("tcp");
  START_ALONE(rig, progress);
  SessionOptions session;
  session.to = rig.receiver().listen_address();
  auto other = Sender::Connect(session);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  const auto bytes = Pattern(2, 4 << 10);
  ASSERT_TRUE((*other)->SendBytes(bytes, SmallChunks("other-first")).status.ok());

  rig.target().ForgetPollers();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(DeliverSmall(rig, "both-" + std::to_string(i) + "-", 1).ok());
    const DeliveryOutcome out =
        (*other)->SendBytes(bytes, SmallChunks("other-" + std::to_string(i)));
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  }
  EXPECT_GT(rig.target().Pollers().count(progress), 0u)
      << "with two connections, the progress thread polls for both";

  ASSERT_TRUE((*other)->Close().ok());
  other->reset();
  EXPECT_TRUE(LeadsAgain(rig, progress, "alone-"))
      << "alone again, the first connection never led the loop again";
}

TEST(ReceiverProgressLead, ADeliveryThroughWindowsHandsThePollsBackWhileItRuns) {
  SeamRig rig("tcp");
  START_ALONE(rig, progress);
  rig.target().ForgetPollers();
  const auto large = Pattern(3, 4 << 20);  // 64 chunks of 64 KiB, through windows
  const DeliveryOutcome out = rig.Deliver(large, SmallChunks("large"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_GT(rig.target().Pollers().count(progress), 0u)
      << "the window's chunks landed with the progress thread idle";
  EXPECT_TRUE(LeadsAgain(rig, progress, "after-"))
      << "once the windowed delivery ended, the connection never led the loop again";
}

}  // namespace
}  // namespace writ::seam
