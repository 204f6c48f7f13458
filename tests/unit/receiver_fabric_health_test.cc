// The receiver's fabric health (Receiver::health): a poll of its completion queues that
// fails, and one that never returns (libfabric 1.17's shm provider spinning on a lock a
// killed sender held), are reported once as an error event, make every new announce
// refused naming them, and never leave Stop waiting for ever.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "common/mutex.h"
#include "common/turn_watch.h"
#include "seam_rig.h"

namespace writ::seam {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The "fabric" events a receiver emits; `first` is ready at the first.
struct FabricEvents {
  Mutex mu;
  std::vector<LogEvent> seen GUARDED_BY(mu);
  std::promise<void> first;

  void Hook(ReceiverOptions& options) {
    options.on_event = [this](const LogEvent& event) {
      if (event.event != "fabric") return;
      MutexLock lock(mu);
      seen.push_back(event);
      if (seen.size() == 1) first.set_value();
    };
  }
  std::vector<LogEvent> Seen() {
    MutexLock lock(mu);
    return seen;
  }
};

TEST(ReceiverFabric, AFailedPollIsReportedOnceAndRefusesNewDeliveries) {
  SeamRig rig("tcp");
  auto events = std::make_shared<FabricEvents>();  // outlives the receiver's threads
  ReceiverOptions options;
  events->Hook(options);
  SEAM_START(rig, options);
  ASSERT_TRUE(rig.Connect(4).ok());
  const auto bytes = Pattern(3, 4 << 10);
  ASSERT_TRUE(rig.Deliver(bytes, SmallChunks("before")).status.ok());
  EXPECT_TRUE(rig.receiver().health().ok());

  rig.target().FailPolls(Status::Transport("injected: the completion queue read failed"));
  ASSERT_EQ(events->first.get_future().wait_for(30s), std::future_status::ready)
      << "no fabric event 30 s after the polls began to fail";
  const Status health = rig.receiver().health();
  EXPECT_EQ(health.code(), ErrorCode::kTransport) << health.ToString();
  EXPECT_NE(health.message().find("injected: the completion queue read failed"), std::string::npos)
      << health.ToString();
  const std::vector<LogEvent> seen = events->Seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].level, LogEvent::Level::kError);
  EXPECT_NE(seen[0].message.find("injected"), std::string::npos) << seen[0].message;
  EXPECT_GE(rig.target().counts().polls_failed, 1u);

  const DeliveryOutcome after = rig.Deliver(bytes, SmallChunks("after"));
  EXPECT_FALSE(after.status.ok());
  EXPECT_NE(after.status.message().find("no longer makes progress"), std::string::npos)
      << after.status.ToString();
  EXPECT_NE(after.status.message().find("injected"), std::string::npos) << after.status.ToString();
  EXPECT_TRUE(after.receipts.empty());
  // The loop ended by itself: Stop joins it and closes the fabric.
  EXPECT_TRUE(rig.StopReceiver().ok());
  EXPECT_EQ(events->Seen().size(), 1u);
}

// A delivery admitted before the failure, still waiting for a chunk, is refused at once
// naming the fabric, not left to its grant-unused timeout.
TEST(ReceiverFabric, ADeliveryStillWaitingForChunksIsRefusedNamingTheFabric) {
  SeamRig rig("tcp");
  auto events = std::make_shared<FabricEvents>();
  ReceiverOptions options;
  events->Hook(options);
  SEAM_START(rig, options);
  ASSERT_TRUE(rig.Connect(4).ok());
  // Two chunks: two one-chunk windows, both in the rig's two-window pool, so every chunk is
  // written although the second's notification never counts (the run waits for it).
  rig.target().DropNotification(1);
  const auto bytes = Pattern(6, 2 * (64 << 10));
  auto written = std::make_shared<std::promise<void>>();
  DeliveryOptions delivery = SmallChunks("waiting");
  delivery.stall_timeout = 20s;  // had the receiver said nothing: a stall, named as such
  delivery.on_receipt = [written, once = std::make_shared<std::once_flag>()](ReceiptRung rung) {
    if (rung == ReceiptRung::kTransport) std::call_once(*once, [&] { written->set_value(); });
  };
  auto session = rig.OpenSession(1);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  DeliveryHandle handle = SeamRig::Submit(**session, bytes, delivery);
  // Every write completed at the sender: the receiver admitted the delivery and granted it.
  ASSERT_EQ(written->get_future().wait_for(30s), std::future_status::ready)
      << "the delivery's writes did not complete";
  // The sender sees its writes complete before the receiver need have read the second
  // notification: wait until it has (and it was dropped), so the run is waiting for it.
  ASSERT_TRUE(rig.target().WaitForDroppedNotifications(1, 30s))
      << "the receiver never read the second chunk's notification";

  rig.target().FailPolls(Status::Transport("injected: the completion queue read failed"));
  const DeliveryOutcome& out = handle.Wait();
  EXPECT_FALSE(out.status.ok());
  EXPECT_NE(out.status.message().find("its chunks can never land"), std::string::npos)
      << out.status.ToString();
  EXPECT_NE(out.status.message().find("injected"), std::string::npos) << out.status.ToString();
  EXPECT_EQ(rig.target().counts().notifications_dropped, 1u);
  ASSERT_EQ(events->first.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(events->Seen().size(), 1u);
  (void)(*session)->Close();
}

TEST(ReceiverFabric, AProgressCallThatNeverReturnsIsReportedAndStopLeavesItBehind) {
  SeamRig rig("tcp");
  // As on shm, the provider whose calls can hang so: no wait objects, so the progress thread
  // alone polls (a connection leads the loop only where its queues can be waited on).
  rig.HideWaitObjects();
  auto events = std::make_shared<FabricEvents>();
  ReceiverOptions options;
  events->Hook(options);
  SEAM_START(rig, options, TurnWatch::kMinLimit);
  ASSERT_TRUE(rig.Connect(4).ok());
  const auto bytes = Pattern(4, 4 << 10);
  ASSERT_TRUE(rig.Deliver(bytes, SmallChunks("before")).status.ok());

  fabric::FaultInjectingFabric& target = rig.target();  // left allocated by Stop below
  const auto t0 = Clock::now();
  target.HangNextPoll();
  ASSERT_EQ(events->first.get_future().wait_for(30s), std::future_status::ready)
      << "no fabric event 30 s after a poll stopped returning";
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, TurnWatch::kMinLimit);
  EXPECT_LT(took, TurnWatch::kMinLimit + 10s);
  EXPECT_EQ(target.counts().polls_hung, 1u);
  const Status health = rig.receiver().health();
  EXPECT_EQ(health.code(), ErrorCode::kTransport) << health.ToString();
  EXPECT_NE(health.message().find("inside one call"), std::string::npos) << health.ToString();

  // Admission runs on the connection's thread, which does not need the stuck one.
  const DeliveryOutcome after = rig.Deliver(bytes, SmallChunks("after"));
  EXPECT_FALSE(after.status.ok());
  EXPECT_NE(after.status.message().find("no longer makes progress"), std::string::npos)
      << after.status.ToString();

  // Stop returns (bounded here, so a Stop that joins the stuck thread fails the test instead
  // of timing it out) and says why the fabric was left as it is.
  auto stopped = std::async(std::launch::async, [&rig] { return rig.StopReceiver(); });
  const bool returned = stopped.wait_for(20s) == std::future_status::ready;
  if (!returned) target.ReleaseHang();  // let the test end, failed
  ASSERT_TRUE(returned) << "Stop waited for the stuck progress thread";
  const Status stop = stopped.get();
  EXPECT_EQ(stop.ToString(), health.ToString());
  // The call returns at last: the abandoned thread goes back into the loop and the node
  // (both left allocated) and calls nothing of the stopped receiver's.
  target.ReleaseHang();
  EXPECT_EQ(events->Seen().size(), 1u);
}

}  // namespace
}  // namespace writ::seam
