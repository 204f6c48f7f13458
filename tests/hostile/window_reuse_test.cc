// A sender that never writes a byte must never be told that it delivered one: windows
// reused for another delivery are cleared, nothing computed over received bytes goes back
// to a peer, and a delivery the receiver already holds is answered without bytes only to
// the identity that delivered it. Each test runs a real `writ serve` and a hostile sender
// built on writ's fabric layer (notifying_sender.h) that notifies chunks without writing.
#include <gtest/gtest.h>

#include <regex>

#include "notifying_sender.h"
#include "protocol/digest.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

struct Victim {
  std::string id;
  uint64_t bytes = 0;
  std::vector<uint8_t> digest;  // from `writ query`: anyone who reaches the port reads it
};

// A real sender delivers `bytes` of pattern 7 as `id`, validated and retained (volatile).
Victim Deliver(Serve& serve, const TempDir& dir, const std::string& id, uint64_t bytes,
               std::vector<std::string> extra = {}) {
  const std::string file = dir.File(id + ".bin");
  WritePatternFile(file, 7, bytes);
  std::vector<std::string> args{"send", file, "--id", id, "--to", serve.address(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CommandRun sent = RunWrit(args);
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  CommandRun query = RunWrit({"query", id, "--to", serve.address(), "--json"});
  EXPECT_EQ(query.exit_code, 0) << query.err;
  auto digest = protocol::FromHex(query.json.value("digest", ""));
  EXPECT_TRUE(digest.ok()) << query.out;
  return Victim{id, bytes, digest.ok() ? *digest : std::vector<uint8_t>{}};
}

protocol::Announce AnnounceOf(const std::string& id, const Victim& like) {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = like.bytes;
  a.chunk_size = 16 << 10;
  a.rule = Rule::kXxh3_128;
  a.digest = like.digest;
  a.until = Rung::kValidated;
  a.retention = RetentionClass::kVolatile;
  return a;
}

bool Reached(const HostileOutcome& out, const std::string& rung) {
  return std::find(out.rungs.begin(), out.rungs.end(), rung) != out.rungs.end();
}

class NotifyWithoutWriting : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!ProviderAvailable(GetParam()))
      GTEST_SKIP() << "provider " << GetParam() << " is not available here";
  }
};

// The window the attacker is granted is the one the victim's bytes were just consumed
// from (the pool hands out the most recently released window first).
TEST_P(NotifyWithoutWriting, ANotifiedButUnwrittenDeliveryFailsValidation) {
  TempDir dir;
  auto serve = Serve::Start(GetParam());
  ASSERT_TRUE(serve);
  const Victim victim = Deliver(*serve, dir, "victim", 64 << 10);
  auto attacker = NotifyingSender::Connect(serve->address(), GetParam());
  ASSERT_TRUE(attacker.ok()) << attacker.status().ToString();
  HostileOutcome out = (*attacker)->Run(AnnounceOf("copy", victim), 20s);
  EXPECT_GT(out.notifications, 0u) << "the attacker was never granted a window";
  EXPECT_FALSE(Reached(out, "validated")) << "a validated receipt for bytes never sent";
  EXPECT_FALSE(Reached(out, "retained"));
  ASSERT_EQ(out.refusals.size(), 1u);
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation);
  CommandRun query = RunWrit({"query", "copy", "--to", serve->address()});
  EXPECT_EQ(query.exit_code, 1) << "the victim's bytes are held under the attacker's id";
}

// A refusal names what was wrong, never a value computed over the received bytes: with
// it, a sender that writes nothing could read a window out a probe at a time.
TEST_P(NotifyWithoutWriting, NoRefusalCarriesADigestOfWhatTheWindowHeld) {
  TempDir dir;
  auto serve = Serve::Start(GetParam());
  ASSERT_TRUE(serve);
  const Victim victim = Deliver(*serve, dir, "victim", 64 << 10);
  auto attacker = NotifyingSender::Connect(serve->address(), GetParam());
  ASSERT_TRUE(attacker.ok()) << attacker.status().ToString();
  Victim wrong = victim;
  wrong.digest.assign(wrong.digest.size(), 0x11);
  HostileOutcome out = (*attacker)->Run(AnnounceOf("probe", wrong), 20s);
  ASSERT_EQ(out.refusals.size(), 1u);
  const std::string& detail = out.refusals[0].detail;
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation) << detail;
  EXPECT_FALSE(std::regex_search(detail, std::regex("[0-9a-fA-F]{16,}")))
      << "the refusal carries a digest: " << detail;
}

// Knowing a retained delivery's digest (query publishes it) is not having its bytes.
TEST_P(NotifyWithoutWriting, KnowingADigestIsNotHoldingTheBytes) {
  TempDir dir;
  auto serve = Serve::Start(GetParam());
  ASSERT_TRUE(serve);
  const Victim victim = Deliver(*serve, dir, "held", 64 << 10);
  auto attacker = NotifyingSender::Connect(serve->address(), GetParam());
  ASSERT_TRUE(attacker.ok()) << attacker.status().ToString();
  HostileOutcome out = (*attacker)->Run(AnnounceOf("held", victim), 20s);
  // `received` may come (it attests notifications, and says it does not establish how many
  // bytes were placed); nothing above it may.
  EXPECT_FALSE(Reached(out, "validated")) << "the held delivery's receipts, without its bytes";
  EXPECT_FALSE(Reached(out, "retained"));
  EXPECT_GT(out.grants, 0u) << "without proof the bytes must move";
  ASSERT_EQ(out.refusals.size(), 1u);
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation);
  CommandRun query = RunWrit({"query", "held", "--to", serve->address(), "--json"});
  EXPECT_EQ(query.exit_code, 0) << "the victim's delivery is still held";
}

// The providers that report no length for a remote write, where a notification can come
// without its bytes. (shm moves a write and its notification together, and does not check
// keys at all: docs/security.md.)
INSTANTIATE_TEST_SUITE_P(Providers, NotifyWithoutWriting, ::testing::Values("tcp", "tcp;ofi_rxm"),
                         [](const auto& info) {
                           return info.param == "tcp" ? std::string("tcp") : std::string("rxm");
                         });

}  // namespace
}  // namespace writ::testing
