// The MemoryFabric itself: what a write places, what it is refused for, and the wait fd.
#include "fabric/memory_fabric.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <vector>

#include "fabric/request_table.h"

namespace writ::fabric {
namespace {

struct TwoPorts {
  MemoryFabric fabric;
  std::unique_ptr<FabricPort> writer;
  std::unique_ptr<FabricPort> target;
  Peer to_target;

  void Open(bool target_adds_writer) {
    writer = std::move(fabric.Open(NodeOptions{})).value();
    target = std::move(fabric.Open(NodeOptions{})).value();
    to_target = writer->AddPeer(target->LocalAddress().value()).value();
    if (target_adds_writer) {
      ASSERT_TRUE(target->AddPeer(writer->LocalAddress().value()).ok());
    }
  }
};

WriteRequest WriteOf(const Peer& peer, const MemoryRegion& source, const MemoryRegion& window,
                     uint64_t length) {
  WriteRequest w;
  w.request_id = 7;
  w.peer = peer;
  w.local = &source;
  w.length = length;
  w.remote = window.descriptor();
  w.remote_data = 0x00050001;
  return w;
}

TEST(MemoryFabric, AWriteWithDataPlacesTheBytesAndNotifiesTheTargetNamingTheWriter) {
  TwoPorts ports;
  ports.Open(/*target_adds_writer=*/true);
  std::vector<uint8_t> source(100, 0xab), window(256, 0);
  auto src = ports.writer->Register(source.data(), source.size(), Access::kLocalSource).value();
  auto win = ports.target->Register(window.data(), window.size(), Access::kRemoteWrite).value();
  WriteRequest w = WriteOf(ports.to_target, src, win, source.size());
  w.remote_offset = 10;
  auto posted = ports.writer->PostWrite(w);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  EXPECT_EQ(posted->granted, CompletionLevel::kDelivery);
  EXPECT_EQ(window[9], 0);
  EXPECT_EQ(window[10], 0xab);
  EXPECT_EQ(window[109], 0xab);
  EXPECT_EQ(window[110], 0);

  std::vector<WorkCompletion> mine, theirs;
  ASSERT_EQ(ports.writer->Poll(mine).value(), 1u);
  EXPECT_TRUE(mine[0].ok());
  EXPECT_EQ(mine[0].request_id(), 7u);
  EXPECT_EQ(mine[0].operation().value(), Operation::kWrite);
  ASSERT_EQ(ports.target->Poll(theirs).value(), 1u);
  EXPECT_EQ(theirs[0].operation().value(), Operation::kRemoteWrite);
  EXPECT_EQ(theirs[0].remote_data().value(), 0x00050001u);
  EXPECT_NE(theirs[0].source().value(), FI_ADDR_NOTAVAIL);
  EXPECT_EQ(ports.fabric.counts().bytes_placed, 100u);
}

TEST(MemoryFabric, AWriterTheTargetNeverAddedIsNamedNotAvailable) {
  TwoPorts ports;
  ports.Open(/*target_adds_writer=*/false);
  std::vector<uint8_t> source(8, 1), window(8, 0);
  auto src = ports.writer->Register(source.data(), source.size(), Access::kLocalSource).value();
  auto win = ports.target->Register(window.data(), window.size(), Access::kRemoteWrite).value();
  ASSERT_TRUE(ports.writer->PostWrite(WriteOf(ports.to_target, src, win, 8)).ok());
  std::vector<WorkCompletion> theirs;
  ASSERT_EQ(ports.target->Poll(theirs).value(), 1u);
  EXPECT_EQ(theirs[0].source().value(), FI_ADDR_NOTAVAIL);
}

TEST(MemoryFabric, AWrongKeyARangePastTheRegionAndARegionNotRemotelyWritableAreAccessErrors) {
  TwoPorts ports;
  ports.Open(true);
  std::vector<uint8_t> source(64, 2), window(32, 0), local_only(64, 0);
  auto src = ports.writer->Register(source.data(), source.size(), Access::kLocalSource).value();
  auto win = ports.target->Register(window.data(), window.size(), Access::kRemoteWrite).value();
  auto not_writable =
      ports.target->Register(local_only.data(), local_only.size(), Access::kLocalSource).value();

  WriteRequest wrong_key = WriteOf(ports.to_target, src, win, 16);
  wrong_key.remote.key += 1000;
  WriteRequest past = WriteOf(ports.to_target, src, win, 16);
  past.remote_offset = 20;
  WriteRequest local = WriteOf(ports.to_target, src, not_writable, 16);
  for (const WriteRequest& w : {wrong_key, past, local}) {
    ASSERT_TRUE(ports.writer->PostWrite(w).ok());
    std::vector<WorkCompletion> mine;
    ASSERT_EQ(ports.writer->Poll(mine).value(), 1u);
    EXPECT_FALSE(mine[0].ok());
    EXPECT_EQ(mine[0].status().fi_errno, FI_EIO);
    EXPECT_EQ(mine[0].provider_error().value().prov_errno, 10);
    EXPECT_EQ(mine[0].request_id(), 7u);
    EXPECT_FALSE(mine[0].operation().ok()) << "an error record holds no operation";
  }
  std::vector<WorkCompletion> theirs;
  EXPECT_EQ(ports.target->Poll(theirs).value(), 0u) << "no notification, nothing placed";
  EXPECT_EQ(window, std::vector<uint8_t>(32, 0));
  EXPECT_EQ(ports.fabric.counts().access_errors, 3u);
}

TEST(MemoryFabric, AClosedRegionTakesNoMoreWrites) {
  TwoPorts ports;
  ports.Open(true);
  std::vector<uint8_t> source(8, 3), window(8, 0);
  auto src = ports.writer->Register(source.data(), source.size(), Access::kLocalSource).value();
  auto win = ports.target->Register(window.data(), window.size(), Access::kRemoteWrite).value();
  const WriteRequest w = WriteOf(ports.to_target, src, win, 8);
  ASSERT_TRUE(win.Close().ok());
  EXPECT_FALSE(win.open());
  ASSERT_TRUE(ports.writer->PostWrite(w).ok());
  std::vector<WorkCompletion> mine;
  ASSERT_EQ(ports.writer->Poll(mine).value(), 1u);
  EXPECT_EQ(mine[0].status().fi_errno, FI_EIO);
  EXPECT_EQ(window, std::vector<uint8_t>(8, 0));
}

TEST(MemoryFabric, TheWaitFdIsHandedOutOnlyWhenDrainedAndARecordRaisesIt) {
  TwoPorts ports;
  ports.Open(true);
  ASSERT_TRUE(ports.target->can_wait());
  std::vector<pollfd> fds;
  ASSERT_TRUE(ports.target->PrepareWait(fds).value());
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_EQ(::poll(fds.data(), fds.size(), 0), 0) << "nothing arrived yet";

  std::vector<uint8_t> source(8, 4), window(8, 0);
  auto src = ports.writer->Register(source.data(), source.size(), Access::kLocalSource).value();
  auto win = ports.target->Register(window.data(), window.size(), Access::kRemoteWrite).value();
  ASSERT_TRUE(ports.writer->PostWrite(WriteOf(ports.to_target, src, win, 8)).ok());
  EXPECT_EQ(::poll(fds.data(), fds.size(), 1000), 1) << "the notification raised the fd";
  EXPECT_FALSE(ports.target->PrepareWait(fds).value()) << "a record is waiting: poll first";
  std::vector<WorkCompletion> theirs;
  ASSERT_EQ(ports.target->Poll(theirs).value(), 1u);
  ASSERT_TRUE(ports.target->PrepareWait(fds).value());
  EXPECT_EQ(::poll(fds.data(), fds.size(), 0), 0) << "drained again";
}

}  // namespace
}  // namespace writ::fabric
