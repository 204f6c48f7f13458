// With an allow list, `writ query` answers only signed queries from allowed keys: what a
// receiver holds (ids, sizes, digests, receipts) is not for anyone who reaches the port.
#include <gtest/gtest.h>

#include <fstream>

#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::string KeyOf(const std::string& identity_dir) {
  CommandRun shown = RunWrit({"key", "show", "--identity", identity_dir});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  return shown.out.substr(0, 64);
}

struct AllowListed {
  TempDir dir;
  std::string alice = dir.File("alice");
  std::string mallory = dir.File("mallory");
  std::unique_ptr<Serve> serve;

  AllowListed() {
    std::ofstream(dir.File("allow")) << KeyOf(alice) << "\n";
    (void)KeyOf(mallory);
    WritePatternFile(dir.File("data"), 3, 100 << 10);
    serve = Serve::Start("tcp", {"--allow", dir.File("allow"), "--identity", dir.File("server")});
    if (!serve) return;
    CommandRun sent = RunWrit(
        {"send", dir.File("data"), "--id", "held", "--to", serve->address(), "--identity", alice});
    EXPECT_EQ(sent.exit_code, 0) << sent.err;
  }
};

TEST(QueryAuth, AnUnsignedQueryIsRefusedByAReceiverWithAnAllowList) {
  AllowListed f;
  ASSERT_TRUE(f.serve);
  CommandRun q = RunWrit({"query", "held", "--to", f.serve->address(), "--json"});
  EXPECT_EQ(q.exit_code, 3) << q.out << q.err;
  EXPECT_EQ(q.out.find("digest"), std::string::npos) << "the answer leaked: " << q.out;
  EXPECT_NE(q.err.find("allow list"), std::string::npos) << q.err;
}

TEST(QueryAuth, AQuerySignedByAKeyNotOnTheListIsRefused) {
  AllowListed f;
  ASSERT_TRUE(f.serve);
  CommandRun q =
      RunWrit({"query", "held", "--to", f.serve->address(), "--identity", f.mallory, "--json"});
  EXPECT_EQ(q.exit_code, 3) << q.out << q.err;
  EXPECT_NE(q.err.find("not on the allow list"), std::string::npos) << q.err;
}

TEST(QueryAuth, AnAllowedSignedQueryIsAnswered) {
  AllowListed f;
  ASSERT_TRUE(f.serve);
  CommandRun q =
      RunWrit({"query", "held", "--to", f.serve->address(), "--identity", f.alice, "--json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.json["state"], "retained");
}

// A signed query replayed byte for byte (e.g. captured on the path) is refused.
TEST(QueryAuth, AReplayedSignedQueryIsRefused) {
  AllowListed f;
  ASSERT_TRUE(f.serve);
  auto host_port = protocol::ParseHostPort(f.serve->address());
  ASSERT_TRUE(host_port.ok());
  auto ask = [&](const protocol::Query& query) -> protocol::Message {
    auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second, 5s);
    EXPECT_TRUE(channel.ok());
    auto hello = channel->Receive(5s);
    EXPECT_TRUE(hello.ok());
    EXPECT_TRUE(channel->Send(query).ok());
    auto answer = channel->Receive(5s);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? *answer : protocol::Message(protocol::Abort{});
  };
  // Signed as alice's `writ query --identity` signs it (the same helper).
  auto identity = receipt::Identity::LoadOrCreate(f.alice);
  ASSERT_TRUE(identity.ok());
  auto first_hello = [&] {
    auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second, 5s);
    auto hello = channel->Receive(5s);
    return std::get<protocol::Hello>(*hello);
  }();
  protocol::Query query;
  query.delivery_id = "held";
  ASSERT_TRUE(sender::SignQuery(*identity, first_hello.receiver_id, query).ok());
  EXPECT_TRUE(std::holds_alternative<protocol::QueryAnswer>(ask(query)));
  const protocol::Message replayed = ask(query);
  ASSERT_TRUE(std::holds_alternative<protocol::Refuse>(replayed));
  EXPECT_NE(std::get<protocol::Refuse>(replayed).detail.find("replayed"), std::string::npos);
}

}  // namespace
}  // namespace writ::testing
