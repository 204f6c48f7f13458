// The replay set of --allow: every replay within the freshness window refused, expired
// nonces forgotten, and the work per announce independent of how many are remembered
// (counted with the set's own counter of entries it looked at, not timed).
#include "receiver/sender_auth.h"

#include <gtest/gtest.h>

#include "protocol/announce_group.h"
#include "protocol/codec.h"
#include "protocol/validate.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"

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

  // `count` announces signed together (sender::SignAnnounces), at `at`.
  std::vector<protocol::Announce> SignedTogether(uint64_t first, size_t count,
                                                 Clock::time_point at) const {
    std::vector<protocol::Announce> group;
    for (size_t i = 0; i < count; ++i) {
      protocol::Announce a = Signed(first + i, at);
      a.signature.clear();
      group.push_back(std::move(a));
    }
    std::vector<protocol::Announce*> pointers;
    for (auto& a : group) pointers.push_back(&a);
    EXPECT_TRUE(sender::SignAnnounces(*identity_, kReceiver, pointers).ok());
    return group;
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

// Announces started together carry one signature over their group's Merkle root: each is
// admitted on its own (its leaf's path to the root), the root's signature verified once.
TEST_F(SenderAuthTest, AnnouncesSignedTogetherAreAdmittedWithOneVerification) {
  SenderAuth auth;
  const auto group = SignedTogether(100, 7, kT0);
  const uint64_t verified_before = receipt::VerificationsMade();
  for (const auto& a : group) {
    ASSERT_TRUE(protocol::Validate(a, protocol::Limits{}).ok());
    ASSERT_TRUE(protocol::ParseAnnounceGroup(a.signature).has_value());
    EXPECT_EQ(Admit(auth, a, kT0), "admitted") << a.delivery_id;
  }
  EXPECT_EQ(receipt::VerificationsMade() - verified_before, 1u);
  // Each is still one announce: its nonce is spent.
  EXPECT_NE(Admit(auth, group[3], kT0).find("replayed announce"), std::string::npos);
  // One alone is signed plainly.
  const auto lone = SignedTogether(200, 1, kT0);
  EXPECT_EQ(lone[0].signature.size(), protocol::kSignatureBytes);
  EXPECT_EQ(Admit(auth, lone[0], kT0), "admitted");
}

TEST_F(SenderAuthTest, AnAnnounceChangedOrMovedWithinItsGroupIsRefused) {
  SenderAuth auth;
  auto group = SignedTogether(300, 5, kT0);
  EXPECT_EQ(Admit(auth, group[0], kT0), "admitted");  // the root is verified now
  const std::string refused = "the announce's signature does not verify";
  auto bigger = group[1];
  bigger.bytes = 2;
  bigger.chunk_size = 2;
  EXPECT_NE(Admit(auth, bigger, kT0).find(refused), std::string::npos);
  // Another leaf's index (stored little-endian after the 64-byte signature).
  auto moved = group[2];
  moved.signature[protocol::kSignatureBytes] = 3;
  EXPECT_NE(Admit(auth, moved, kT0).find(refused), std::string::npos);
  // A group of another size: the leaf binds it.
  auto resized = group[4];
  resized.signature[protocol::kSignatureBytes + 4] = 6;
  EXPECT_NE(Admit(auth, resized, kT0).find(refused), std::string::npos);
  // A path one step short.
  auto cut = group[1];
  cut.signature.resize(cut.signature.size() - 32);
  EXPECT_NE(Admit(auth, cut, kT0).find("inclusion path"), std::string::npos);
  // Another key's group signature over the same announces.
  auto other = receipt::Identity::Generate();
  ASSERT_TRUE(other.ok());
  auto forged = group;
  std::vector<protocol::Announce*> pointers;
  for (auto& a : forged) {
    a.signature.clear();
    pointers.push_back(&a);
  }
  ASSERT_TRUE(sender::SignAnnounces(*other, kReceiver, pointers).ok());
  EXPECT_NE(Admit(auth, forged[3], kT0).find(refused), std::string::npos);
  // The untouched ones still pass.
  for (size_t i : {1, 2, 3, 4}) EXPECT_EQ(Admit(auth, group[i], kT0), "admitted") << i;
}

TEST(AnnounceGroupShape, OnlyAWellFormedGroupFormIsValid) {
  protocol::Announce a;
  a.delivery_id = "d";
  a.bytes = 1;
  a.chunk_size = 1;
  a.sender_key.assign(protocol::kSenderKeyBytes, 1);
  a.nonce.assign(protocol::kNonceBytes, 2);
  a.time_ms = 1;
  const auto shaped = [&](uint32_t index, uint32_t leaves, size_t steps) {
    protocol::Announce m = a;
    protocol::EncodeAnnounceGroupHeader(m.signature, std::vector<uint8_t>(64, 7), index, leaves);
    m.signature.resize(m.signature.size() + 32 * steps, 9);
    const Status s = protocol::Validate(m, protocol::Limits{});
    return s.ok() ? std::string("valid") : s.message();
  };
  EXPECT_EQ(shaped(0, 2, 1), "valid");
  EXPECT_EQ(shaped(65535, 65536, 16), "valid");
  EXPECT_NE(shaped(2, 2, 1).find("leaf 2 of a group of 2"), std::string::npos);
  EXPECT_NE(shaped(0, 1, 1).find("leaf 0 of a group of 1"), std::string::npos);
  EXPECT_NE(shaped(0, 65537, 16).find("groups have 2 to 65536 leaves"), std::string::npos);
  EXPECT_NE(shaped(0, 2, 17).find("at most 16"), std::string::npos);
  protocol::Announce ragged = a;
  ragged.signature.assign(64 + 8 + 31, 1);
  EXPECT_NE(protocol::Validate(ragged, protocol::Limits{}).message().find("72 + 32 a step"),
            std::string::npos);
  // A query's signature has no group form.
  protocol::Query q{"d", a.sender_key, a.nonce, 1, {}};
  protocol::EncodeAnnounceGroupHeader(q.signature, std::vector<uint8_t>(64, 7), 0, 2);
  q.signature.resize(q.signature.size() + 32, 9);
  EXPECT_NE(protocol::Validate(q, protocol::Limits{}).message().find("signatures have 64"),
            std::string::npos);
}

}  // namespace
}  // namespace writ::receiver
