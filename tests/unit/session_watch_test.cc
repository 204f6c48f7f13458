// The sender session's watch (common/turn_watch.h): a call into the provider that never
// returns fails every handle within the stall timeout instead of leaving its callers waiting
// for ever, and a session that is merely idle is never abandoned.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "seam_rig.h"

namespace writ::seam {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

DeliveryOptions Quick(const std::string& id) {
  DeliveryOptions options = SmallChunks(id);
  options.stall_timeout = 1s;  // the watch's limit stays at its floor, TurnWatch::kMinLimit
  return options;
}

TEST(SessionWatch, AWriteThatNeverReturnsFailsEveryHandleInsteadOfHanging) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.initiator().HangWrite(2);
  const auto bytes = Pattern(7, 8 * (64 << 10));  // outlives the session: its source
  std::promise<void> first_done;                  // likewise: set from the session's threads
  auto session = rig.OpenSession(1);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // Declared after the session, so run before it is destroyed: whatever fails below, the
  // stuck call returns and the session's thread can end before the session goes.
  const struct ReleaseAtEnd {
    fabric::FaultInjectingFabric& fabric;
    ~ReleaseAtEnd() { fabric.ReleaseHang(); }
  } release_at_end{rig.initiator()};
  const auto t0 = Clock::now();
  DeliveryHandle hung = SeamRig::Submit(**session, bytes, Quick("hung"));
  DeliveryHandle waiting = SeamRig::Submit(**session, bytes, Quick("behind-it"));

  // Bounded, so that a watch that never fires fails here instead of at CTest's timeout.
  hung.OnDone([&first_done] { first_done.set_value(); });
  ASSERT_EQ(first_done.get_future().wait_for(30s), std::future_status::ready)
      << "no outcome 30 s after the write stopped returning";
  const DeliveryOutcome& out = hung.Wait();
  const auto took = Clock::now() - t0;
  const std::string first = out.status.ToString();
  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  EXPECT_NE(out.status.message().find("a call it made has not returned"), std::string::npos)
      << out.status.ToString();
  EXPECT_EQ(out.delivery.id, "hung");
  EXPECT_EQ(out.delivery.bytes, bytes.size());
  EXPECT_TRUE(out.receipts.empty());
  EXPECT_GE(took, TurnWatch::kMinLimit);
  EXPECT_LT(took, TurnWatch::kMinLimit + 10s);
  // A delivery waiting behind the stuck one fails with it (the watch sets it just after).
  EXPECT_EQ(waiting.Wait().status.ToString(), out.status.ToString());
  EXPECT_EQ(rig.initiator().counts().writes_hung, 1u);
  EXPECT_TRUE((*session)->stuck());
  EXPECT_EQ((*session)->health().ToString(), out.status.ToString());

  // Later submissions fail at once, without reaching the stuck thread.
  DeliveryHandle later = SeamRig::Submit(**session, bytes, Quick("later"));
  ASSERT_TRUE(later.Ready());
  EXPECT_EQ(later.Wait().status.ToString(), out.status.ToString());
  // While the thread is stuck, Close says why and leaves everything in place.
  EXPECT_EQ((*session)->Close().ToString(), out.status.ToString());

  // The call comes back: the thread ends the session and Close (waiting a moment for it)
  // finishes; the outcome the watch gave stands.
  rig.initiator().ReleaseHang();
  for (int i = 0; i < 30 && (*session)->stuck(); ++i) (void)(*session)->Close();  // 1 s each
  EXPECT_FALSE((*session)->stuck());
  EXPECT_EQ(hung.Wait().status.ToString(), first);
  EXPECT_TRUE(hung.Wait().receipts.empty());
}

TEST(SessionWatch, AnIdleSessionIsNeverAbandoned) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  auto session = rig.OpenSession(1);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const auto bytes = Pattern(8, 4 << 10);
  ASSERT_TRUE(SeamRig::Submit(**session, bytes, Quick("first")).Wait().status.ok());
  std::this_thread::sleep_for(TurnWatch::kMinLimit + 1500ms);  // idle turns only
  EXPECT_TRUE((*session)->health().ok()) << (*session)->health().ToString();
  const DeliveryHandle handle = SeamRig::Submit(**session, bytes, Quick("second"));
  const DeliveryOutcome& second = handle.Wait();  // valid while the handle is
  EXPECT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_FALSE((*session)->stuck());
}

}  // namespace
}  // namespace writ::seam
