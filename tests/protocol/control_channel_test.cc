#include "protocol/control_channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <future>
#include <thread>

#include "protocol/codec.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

using namespace std::chrono_literals;
using testing::AllSamples;

struct Pair {
  ControlChannel client;
  ControlChannel server;
};

// A connected client/server pair over loopback.
Pair Connect(const std::string& host = "127.0.0.1") {
  auto listener = ControlListener::Listen(host, 0);
  EXPECT_TRUE(listener.ok()) << listener.status().ToString();
  auto client = ControlChannel::Connect(host, listener->port(), 5s);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  auto server = listener->Accept(5s);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return Pair{std::move(client).value(), std::move(server).value()};
}

void SendRaw(ControlChannel& ch, std::span<const uint8_t> bytes) {
  ASSERT_EQ(::send(ch.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

TEST(ControlChannel, EveryMessageBothWays) {
  Pair p = Connect();
  for (const Message& m : AllSamples()) {
    ASSERT_TRUE(p.client.Send(m).ok());
    ASSERT_TRUE(p.server.Send(m).ok());
  }
  for (const Message& m : AllSamples()) {
    auto at_server = p.server.Receive(5s);
    ASSERT_TRUE(at_server.ok()) << at_server.status().ToString();
    EXPECT_EQ(*at_server, m);
    auto at_client = p.client.Receive(5s);
    ASSERT_TRUE(at_client.ok()) << at_client.status().ToString();
    EXPECT_EQ(*at_client, m);
  }
}

TEST(ControlChannel, PeerNamesAndPort) {
  auto listener = ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  EXPECT_NE(listener->port(), 0);
  EXPECT_EQ(listener->address(), "127.0.0.1:" + std::to_string(listener->port()));
  auto client = ControlChannel::Connect("localhost", listener->port(), 5s);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto server = listener->Accept(5s);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(client->peer(), listener->address());
  EXPECT_EQ(server->peer().rfind("127.0.0.1:", 0), 0u) << server->peer();
}

// Receiver::Stop's accept thread ends this way instead of at its poll's timeout.
TEST(ControlChannel, AListenerShutDownEndsAnAcceptUnderWayAndTakesNoMore) {
  auto listener = ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  auto accepting = std::async(std::launch::async, [&] { return listener->Accept(60s); });
  std::this_thread::sleep_for(20ms);  // most likely in its poll by now; either way it must end
  listener->Shutdown();
  const auto accepted = accepting.get();
  ASSERT_FALSE(accepted.ok());
  EXPECT_NE(accepted.status().code(), ErrorCode::kTimeout) << accepted.status().ToString();
  EXPECT_FALSE(ControlChannel::Connect("127.0.0.1", listener->port(), 1s).ok());
}

TEST(ControlChannel, Ipv6Loopback) {
  auto listener = ControlListener::Listen("::1", 0);
  if (!listener.ok()) GTEST_SKIP() << "no IPv6 loopback: " << listener.status().ToString();
  auto client = ControlChannel::Connect("::1", listener->port(), 5s);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto server = listener->Accept(5s);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(client->peer(), "[::1]:" + std::to_string(listener->port()));
  ASSERT_TRUE(client->Send(testing::SampleAnnounce()).ok());
  auto got = server->Receive(5s);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Message(testing::SampleAnnounce()));
}

TEST(ControlChannel, ReceiveTimesOut) {
  Pair p = Connect();
  const auto start = std::chrono::steady_clock::now();
  auto got = p.server.Receive(150ms);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_ERROR(got, ErrorCode::kTimeout, "timed out");
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 3s);
  // Still usable afterwards.
  ASSERT_TRUE(p.client.Send(testing::SampleCommit()).ok());
  auto later = p.server.Receive(5s);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, Message(testing::SampleCommit()));
}

TEST(ControlChannel, PartialFrameSurvivesATimeout) {
  Pair p = Connect();
  const auto frame = Encode(testing::SampleGrant());
  SendRaw(p.client, std::span(frame).first(frame.size() / 2));
  EXPECT_ERROR(p.server.Receive(100ms), ErrorCode::kTimeout, "timed out");
  SendRaw(p.client, std::span(frame).subspan(frame.size() / 2));
  auto got = p.server.Receive(5s);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Message(testing::SampleGrant()));
}

TEST(ControlChannel, PeerClosesMidFrame) {
  Pair p = Connect();
  const auto frame = Encode(testing::SampleAnnounce());
  SendRaw(p.client, std::span(frame).first(20));
  { ControlChannel gone = std::move(p.client); }
  EXPECT_ERROR(p.server.Receive(5s), ErrorCode::kTransport,
               "peer closed the connection mid-frame (20 bytes of an incomplete frame)");
}

TEST(ControlChannel, PeerClosesBetweenFrames) {
  Pair p = Connect();
  ASSERT_TRUE(p.client.Send(testing::SampleCommit()).ok());
  p.client.Shutdown();
  auto first = p.server.Receive(5s);
  ASSERT_TRUE(first.ok());  // what was sent before the close still arrives
  auto got = p.server.Receive(5s);
  EXPECT_ERROR(got, ErrorCode::kTransport, "peer closed the connection");
  EXPECT_EQ(got.status().message().find("mid-frame"), std::string::npos);
}

TEST(ControlChannel, ConnectionReset) {
  Pair p = Connect();
  // SO_LINGER with a zero timeout makes close() send a RST.
  const linger reset{1, 0};
  ASSERT_EQ(::setsockopt(p.client.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
  { ControlChannel gone = std::move(p.client); }
  EXPECT_ERROR(p.server.Receive(5s), ErrorCode::kTransport, "connection reset by peer");
}

TEST(ControlChannel, HostileOversizeLengthRefusedAtOnce) {
  Pair p = Connect();
  const auto header = testing::RawFrame(3, {}, kProtocolVersion, 0, 0xffffffffu);
  SendRaw(p.client, header);  // and the connection stays open
  const auto start = std::chrono::steady_clock::now();
  auto got = p.server.Receive(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_ERROR(got, ErrorCode::kMalformed, "frame.length: grant payload of 4294967295 bytes");
  // The stream is dead from here on.
  ASSERT_TRUE(p.client.Send(testing::SampleCommit()).ok());
  EXPECT_ERROR(p.server.Receive(1s), ErrorCode::kMalformed, "frame.length");
}

TEST(ControlChannel, GarbageIsRefused) {
  Pair p = Connect();
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  SendRaw(p.client, std::span(reinterpret_cast<const uint8_t*>(http.data()), http.size()));
  EXPECT_ERROR(p.server.Receive(5s), ErrorCode::kMalformed, "frame.magic");
}

TEST(ControlChannel, InvalidMessageIsNotSent) {
  Pair p = Connect();
  Announce bad = testing::SampleAnnounce();
  bad.digest.resize(15);
  EXPECT_ERROR(p.client.Send(bad), ErrorCode::kInvalidArgument,
               "send: announce.digest: 15 bytes, xxh3-128 needs 16");
  EXPECT_ERROR(p.server.Receive(100ms), ErrorCode::kTimeout, "timed out");
}

TEST(ControlChannel, LargestFrameWithPartialWrites) {
  Pair p = Connect();
  Receipt r{"RC-233", ""};
  r.json = "{\"p\":\"" + std::string((1 << 20) - 100, 'x') + "\"}";
  // Loopback buffers are smaller than a few frames, so Send has to wait for
  // the reader and resume partial writes.
  auto sender = std::async(std::launch::async, [&] {
    for (int i = 0; i < 8; ++i) {
      Status s = p.server.Send(r);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
  for (int i = 0; i < 8; ++i) {
    auto got = p.client.Receive(10s);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Message(r));
  }
  EXPECT_TRUE(sender.get().ok());
}

TEST(ControlChannel, OversizeSendIsRefusedLocally) {
  Pair p = Connect();
  Receipt r{"RC-233", "{\"p\":\"" + std::string(1 << 20, 'x') + "\"}"};
  EXPECT_ERROR(p.client.Send(r), ErrorCode::kInvalidArgument, "exceeds the limit of 1048576");
}

TEST(ControlChannel, SendTimesOutWhenThePeerDoesNotRead) {
  Pair p = Connect();
  p.client.set_send_timeout(200ms);
  Receipt r{"RC-233", "{\"p\":\"" + std::string(900 * 1024, 'x') + "\"}"};
  Status s;
  for (int i = 0; i < 200 && s.ok(); ++i) s = p.client.Send(r);
  EXPECT_ERROR(s, ErrorCode::kTimeout, "send receipt to 127.0.0.1:");
  // Normally half a frame went out and the channel was shut down rather than
  // left corrupt; either way nothing more gets through.
  EXPECT_FALSE(p.client.Send(testing::SampleCommit()).ok());
}

TEST(ControlChannel, SendToAClosedPeerIsTransport) {
  Pair p = Connect();
  { ControlChannel gone = std::move(p.server); }
  Status s;
  // The first send may still be buffered; the RST then fails a later one.
  for (int i = 0; i < 50 && s.ok(); ++i) {
    s = p.client.Send(testing::SampleCommit());
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(s.code(), ErrorCode::kTransport) << s.ToString();
}

TEST(ControlChannel, ShutdownWakesAReceiver) {
  Pair p = Connect();
  auto receiver = std::async(std::launch::async, [&] { return p.server.Receive(10s); });
  std::this_thread::sleep_for(50ms);
  p.server.Shutdown();
  auto got = receiver.get();
  EXPECT_EQ(got.status().code(), ErrorCode::kTransport) << got.status().ToString();
}

TEST(ControlListener, AcceptTimesOut) {
  auto listener = ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(listener->Accept(100ms), ErrorCode::kTimeout, "accept on 127.0.0.1:");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
}

TEST(ControlListener, PortInUse) {
  auto first = ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  auto second = ControlListener::Listen("127.0.0.1", first->port());
  EXPECT_ERROR(second, ErrorCode::kTransport, "Address already in use");
}

TEST(ControlListener, AnyAddress) {
  auto listener = ControlListener::Listen("", 0);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  auto client = ControlChannel::Connect("127.0.0.1", listener->port(), 5s);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
}

TEST(ControlChannel, ConnectRefused) {
  uint16_t port = 0;
  {
    auto listener = ControlListener::Listen("127.0.0.1", 0);
    ASSERT_TRUE(listener.ok());
    port = listener->port();
  }
  auto ch = ControlChannel::Connect("127.0.0.1", port, 2s);
  EXPECT_ERROR(ch, ErrorCode::kTransport,
               "connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

TEST(ControlChannel, ConnectToUnresolvableHost) {
  auto ch = ControlChannel::Connect("no-such-host.invalid", 7000, 2s);
  EXPECT_ERROR(ch, ErrorCode::kTransport, "cannot resolve \"no-such-host.invalid\"");
}

TEST(ControlChannel, ConnectToPortZero) {
  EXPECT_ERROR(ControlChannel::Connect("127.0.0.1", 0, 1s), ErrorCode::kInvalidArgument, "port 0");
}

}  // namespace
}  // namespace writ::protocol
