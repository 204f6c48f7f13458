// The inbox's wake-up protocol (notification_router.h): a push raises the eventfd only
// while the connection's thread sleeps, and no push is ever left unseen by a sleeper.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "receiver/notification_router.h"

namespace writ::receiver {
namespace {

bool Raised(const Inbox& inbox) {
  pollfd fd{inbox.event_fd(), POLLIN, 0};
  return poll(&fd, 1, 0) == 1;
}

TEST(Inbox, APushWhileTheThreadIsAwakeRaisesNothingAndIsStillTaken) {
  auto inbox = Inbox::Create().value();
  inbox->Push(7);
  inbox->Push(8);
  EXPECT_FALSE(Raised(*inbox)) << "an awake thread drains before it sleeps: no wake-up";
  EXPECT_TRUE(inbox->HasValues());
  std::vector<uint32_t> out;
  inbox->Drain(out, false);
  EXPECT_EQ(out, (std::vector<uint32_t>{7, 8}));
  EXPECT_FALSE(inbox->HasValues());
}

TEST(Inbox, APushToASleepingThreadRaisesTheEventfdOnce) {
  auto inbox = Inbox::Create().value();
  ASSERT_TRUE(inbox->Sleep()) << "nothing queued: the thread may block";
  inbox->Push(1);
  inbox->Push(2);
  ASSERT_TRUE(Raised(*inbox));
  uint64_t counter = 0;
  ASSERT_EQ(read(inbox->event_fd(), &counter, sizeof counter), 8);
  EXPECT_EQ(counter, 1u) << "only the first push after Sleep wakes";
  inbox->Awake();
  std::vector<uint32_t> out;
  inbox->Drain(out, false);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 2}));
}

TEST(Inbox, SleepIsRefusedWhileValuesWait) {
  auto inbox = Inbox::Create().value();
  inbox->Push(3);
  EXPECT_FALSE(inbox->Sleep());
  inbox->Push(4);
  EXPECT_FALSE(Raised(*inbox)) << "a refused sleep leaves the thread awake";
}

// A producer that pushes the next value as soon as the last one was taken, so its pushes
// race the consumer's look and sleep, which go as the connection's thread does them: every
// value arrives, and no wait ever runs to its timeout (a lost wake-up would).
TEST(Inbox, NoPushIsLostBetweenALookAndASleep) {
  auto inbox = Inbox::Create().value();
  constexpr uint32_t kValues = 20000;
  std::atomic<uint32_t> taken{0};
  std::thread producer([&] {
    for (uint32_t i = 0; i < kValues; ++i) {
      while (taken.load() < i) std::this_thread::yield();
      inbox->Push(i);
    }
  });
  std::vector<uint32_t> out;
  uint32_t timed_out = 0;
  while (out.size() < kValues && timed_out == 0) {
    pollfd fd{inbox->event_fd(), POLLIN, 0};
    const bool slept = inbox->Sleep();
    const int ready = poll(&fd, 1, slept ? 2000 : 0);
    inbox->Awake();
    if (slept && ready == 0) ++timed_out;
    inbox->Drain(out, ready == 1);
    taken.store(static_cast<uint32_t>(out.size()));
  }
  taken.store(kValues);  // the producer ends even after a lost wake-up
  producer.join();
  EXPECT_EQ(timed_out, 0u) << "a sleeper missed a push after " << out.size() << " of " << kValues;
  ASSERT_EQ(out.size(), kValues);
  for (uint32_t i = 0; i < kValues; ++i) ASSERT_EQ(out[i], i);
}

}  // namespace
}  // namespace writ::receiver
