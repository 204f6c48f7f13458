// The replay set of --allow: every replay within the freshness window refused, expired
// nonces forgotten, and the work per announce independent of how many are remembered
// (counted with the set's own counter of entries it looked at, not timed).
#include "receiver/sender_auth.h"

#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "receipt/identity.h"

namespace writ::receiver {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::system_clock;

constexpr const char* kReceiver = "writ-serve@test";
const Clock::time_point kT0 = Clock::time_point(milliseconds(1'800'000'000'000));
constexpr milliseconds kFreshness = SenderAuth::kFreshness;

class SenderAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto id = receipt::Identity::Generate();
    ASSERT_TRUE(id.ok());
    identity_ = std::make_unique<receipt::Identity>(std::move(id).value());
  }

  // A signed announce with nonce number `n`, signed at `at`.
  protocol::Announce Signed(uint64_t n, Clock::time_point at) const {
    protocol::Announce a;
    a.delivery_id = "d" + std::to_string(n);
    a.bytes = 1;
    a.chunk_size = 1;
    a.rule = Rule::kCrc32c;
    a.digest = {0, 0, 0, 0};
    a.sender_key.assign(identity_->public_key().begin(), identity_->public_key().end());
    a.nonce.assign(protocol::kNonceBytes, 0);
    for (size_t i = 0; i < 8; ++i) a.nonce[i] = static_cast<uint8_t>(n >> (8 * i));
    a.time_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<milliseconds>(at.time_since_epoch()).count());
    auto sig = identity_->Sign(protocol::AnnounceSigningBytes(a, kReceiver));
    EXPECT_TRUE(sig.ok());
    a.signature.assign(sig->begin(), sig->end());
    return a;
  }

  std::string Admit(SenderAuth& auth, const protocol::Announce& a, Clock::time_point now) {
    auto admitted = auth.Admit(a, kReceiver, now);
    return admitted.ok() ? "admitted" : admitted.status().message();
  }

  std::unique_ptr<receipt::Identity> identity_;
};

TEST_F(SenderAuthTest, AReplayIsRefused) {
  SenderAuth auth;
  const auto a = Signed(1, kT0);
  EXPECT_EQ(Admit(auth, a, kT0), "admitted");
  EXPECT_NE(Admit(auth, a, kT0 + milliseconds(1)).find("replayed announce"), std::string::npos);
}

TEST_F(SenderAuthTest, AReplayIsRefusedUntilTheAnnounceIsStale) {
  SenderAuth auth;
  // Signed in the future (clock skew within the window): it stays fresh for two windows.
  const auto a = Signed(1, kT0 + kFreshness);
  EXPECT_EQ(Admit(auth, a, kT0), "admitted");
  for (auto later : {kFreshness, 2 * kFreshness - milliseconds(1), 2 * kFreshness}) {
    EXPECT_NE(Admit(auth, a, kT0 + later).find("replayed announce"), std::string::npos)
        << later.count();
  }
  EXPECT_NE(Admit(auth, a, kT0 + 2 * kFreshness + milliseconds(1)).find("stale announce"),
            std::string::npos);
}

TEST_F(SenderAuthTest, ExpiredNoncesAreForgotten) {
  SenderAuth auth;
  for (uint64_t n = 0; n < 100; ++n) ASSERT_EQ(Admit(auth, Signed(n, kT0), kT0), "admitted");
  EXPECT_EQ(auth.remembered_nonces(), 100u);
  const auto later = kT0 + kFreshness + std::chrono::seconds(2);
  EXPECT_EQ(Admit(auth, Signed(1000, later), later), "admitted");
  EXPECT_EQ(auth.remembered_nonces(), 1u);
}

TEST_F(SenderAuthTest, MemoryIsBoundedByTheAnnouncesOfOneWindow) {
  SenderAuth auth;
  // One announce every 500 ms for three windows: at most one window (plus the one-second
  // granularity of expiry) of them is remembered at any time.
  const auto step = milliseconds(500);
  const size_t per_window = static_cast<size_t>(kFreshness / step);
  size_t most = 0;
  for (uint64_t n = 0; n < 3 * per_window; ++n) {
    const auto now = kT0 + n * step;
    ASSERT_EQ(Admit(auth, Signed(n, now), now), "admitted");
    most = std::max(most, auth.remembered_nonces());
  }
  EXPECT_LE(most, per_window + 3);
  EXPECT_GE(most, per_window);
}

TEST_F(SenderAuthTest, TheWorkPerAnnounceDoesNotGrowWithTheNoncesRemembered) {
  SenderAuth auth;
  constexpr uint64_t kRemembered = 3000;
  for (uint64_t n = 0; n < kRemembered; ++n) {
    ASSERT_EQ(Admit(auth, Signed(n, kT0), kT0 + milliseconds(n)), "admitted");
  }
  ASSERT_EQ(auth.remembered_nonces(), kRemembered);
  // Nothing has expired: admitting one more looks at no remembered nonce, however many.
  const uint64_t before = auth.nonces_examined();
  ASSERT_EQ(Admit(auth, Signed(kRemembered, kT0), kT0 + milliseconds(kRemembered)), "admitted");
  EXPECT_EQ(auth.nonces_examined() - before, 0u);
  // Once they expire each is looked at once, when it is forgotten: amortised O(1).
  const auto later = kT0 + kFreshness + std::chrono::seconds(10);
  ASSERT_EQ(Admit(auth, Signed(kRemembered + 1, later), later), "admitted");
  EXPECT_EQ(auth.remembered_nonces(), 1u);
  EXPECT_LE(auth.nonces_examined(), kRemembered + 1);
}

}  // namespace
}  // namespace writ::receiver
