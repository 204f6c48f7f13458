// A sender that never writes a byte must never be told that it delivered one: windows
// reused for another delivery are cleared, nothing computed over received bytes goes back
// to a peer, and a delivery the receiver already holds is answered without bytes only to
// the identity that delivered it. Each test runs a real `writ serve` and a hostile sender
// built on writ's fabric layer (notifying_sender.h) that notifies chunks without writing.
#include <gtest/gtest.h>

#include <regex>

#include "common/hex.h"
#include "notifying_sender.h"
#include "requirement.h"
#include "vocabulary/digest.h"
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
  auto digest = writ::FromHex(query.json.value("digest", ""));
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

// Each test: a real `writ serve`, a victim delivery of 64 KiB as `victim_id` by a real
// sender, and an attacker connected to the same serve.
class NotifyWithoutWriting : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " is not available here");
  }
  // Returns false (with the test failed) when the serve, the victim or the attacker fails.
  bool Prepare(const std::string& victim_id) {
    serve_ = Serve::Start(GetParam());
    if (!serve_) return false;
    victim_ = Deliver(*serve_, dir_, victim_id, 64 << 10);
    auto attacker = NotifyingSender::Connect(serve_->address(), GetParam());
    EXPECT_TRUE(attacker.ok()) << attacker.status().ToString();
    if (!attacker.ok()) return false;
    attacker_ = std::move(attacker).value();
    return !victim_.digest.empty();
  }

  TempDir dir_;
  std::unique_ptr<Serve> serve_;
  Victim victim_;
  std::unique_ptr<NotifyingSender> attacker_;
};

// The window the attacker is granted is the one the victim's bytes were just consumed
// from (the pool hands out the most recently released window first).
TEST_P(NotifyWithoutWriting, ANotifiedButUnwrittenDeliveryFailsValidation) {
  ASSERT_TRUE(Prepare("victim"));
  HostileOutcome out = attacker_->Run(AnnounceOf("copy", victim_), 20s);
  EXPECT_GT(out.notifications, 0u) << "the attacker was never granted a window";
  EXPECT_FALSE(Reached(out, "validated")) << "a validated receipt for bytes never sent";
  EXPECT_FALSE(Reached(out, "retained"));
  ASSERT_EQ(out.refusals.size(), 1u);
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation);
  CommandRun query = RunWrit({"query", "copy", "--to", serve_->address()});
  EXPECT_EQ(query.exit_code, 1) << "the victim's bytes are held under the attacker's id";
}

// A refusal names what was wrong, never a value computed over the received bytes: with
// it, a sender that writes nothing could read a window out a probe at a time.
TEST_P(NotifyWithoutWriting, NoRefusalCarriesADigestOfWhatTheWindowHeld) {
  ASSERT_TRUE(Prepare("victim"));
  Victim wrong = victim_;
  wrong.digest.assign(wrong.digest.size(), 0x11);
  HostileOutcome out = attacker_->Run(AnnounceOf("probe", wrong), 20s);
  ASSERT_EQ(out.refusals.size(), 1u);
  const std::string& detail = out.refusals[0].detail;
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation) << detail;
  EXPECT_FALSE(std::regex_search(detail, std::regex("[0-9a-fA-F]{16,}")))
      << "the refusal carries a digest: " << detail;
}

// Knowing a retained delivery's digest (query publishes it) is not having its bytes.
TEST_P(NotifyWithoutWriting, KnowingADigestIsNotHoldingTheBytes) {
  ASSERT_TRUE(Prepare("held"));
  HostileOutcome out = attacker_->Run(AnnounceOf("held", victim_), 20s);
  // `received` may come (it attests notifications, and says it does not establish how many
  // bytes were placed); nothing above it may.
  EXPECT_FALSE(Reached(out, "validated")) << "the held delivery's receipts, without its bytes";
  EXPECT_FALSE(Reached(out, "retained"));
  EXPECT_GT(out.grants, 0u) << "without proof the bytes must move";
  ASSERT_EQ(out.refusals.size(), 1u);
  EXPECT_EQ(out.refusals[0].reason, protocol::RefuseReason::kValidation);
  CommandRun query = RunWrit({"query", "held", "--to", serve_->address(), "--json"});
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
