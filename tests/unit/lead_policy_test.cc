// LeadPolicy (receiver/lead_policy.h): when a receiver connection may read the fabric's
// completion queues on its own thread.
#include "receiver/lead_policy.h"

#include <gtest/gtest.h>

#include <chrono>

namespace writ::receiver {
namespace {

using namespace std::chrono_literals;

TEST(LeadPolicy, OnlyTheReceiversOnlyConnectionLeadsAndNeverOnAFailedFabric) {
  LeadPolicy policy;
  EXPECT_TRUE(policy.MayLead(1, false));
  EXPECT_FALSE(policy.MayLead(2, false)) << "a leader would poll for the other connection too";
  EXPECT_FALSE(policy.MayLead(0, false));
  EXPECT_FALSE(policy.MayLead(1, true));
}

TEST(LeadPolicy, ARunNeedingTheFabricsThreadStopsTheLeadUntilNoRunIsLeft) {
  LeadPolicy policy;
  policy.NeedFabricThread();
  EXPECT_FALSE(policy.MayLead(1, false));
  policy.AfterWait(false, false, 10ms);
  EXPECT_FALSE(policy.MayLead(1, false)) << "a wait alone does not end the need";
  policy.RunsEnded();
  EXPECT_TRUE(policy.MayLead(1, false));
}

TEST(LeadPolicy, ALeaderThatKeepsFindingWorkWaitingFollowsUntilItIdles) {
  LeadPolicy policy;
  for (int i = 1; i < LeadPolicy::kBusyWaitsToFollow; ++i) policy.AfterWait(true, true, 0ms);
  EXPECT_TRUE(policy.MayLead(1, false)) << "one wait short of saturated";
  policy.AfterWait(true, true, 0ms);
  EXPECT_TRUE(policy.saturated());
  EXPECT_FALSE(policy.MayLead(1, false));
  policy.RunsEnded();
  EXPECT_FALSE(policy.MayLead(1, false)) << "no run left is not idle: the next burst is there";
  policy.AfterWait(false, false, 900us);
  EXPECT_FALSE(policy.MayLead(1, false)) << "a wait shorter than kIdleAtLeast";
  policy.AfterWait(false, false, LeadPolicy::kIdleAtLeast);
  EXPECT_TRUE(policy.MayLead(1, false));
}

TEST(LeadPolicy, AWaitThatBlockedBreaksTheStreakAndAFollowerNeverCountsOne) {
  LeadPolicy policy;
  for (int round = 0; round < 3; ++round) {
    for (int i = 1; i < LeadPolicy::kBusyWaitsToFollow; ++i) policy.AfterWait(true, true, 0ms);
    policy.AfterWait(true, false, 50us);  // a delivery at a time: each wait blocks for the next
  }
  EXPECT_FALSE(policy.saturated());
  for (int i = 0; i < 3 * LeadPolicy::kBusyWaitsToFollow; ++i) policy.AfterWait(false, true, 0ms);
  EXPECT_FALSE(policy.saturated()) << "a follower's busy waits say nothing of leading";
}

}  // namespace
}  // namespace writ::receiver
