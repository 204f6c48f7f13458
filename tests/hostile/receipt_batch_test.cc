// Receipts ready at the same moment travel in one `receipts` message (docs/protocol.md,
// "Receipts ready together"), read off the wire by a sender built on writ's own layers.
// An empty delivery needs no write, so the notifying sender completes it honestly.
#include <gtest/gtest.h>

#include "notifying_sender.h"
#include "requirement.h"
#include "vocabulary/digest.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

TEST(ReceiptBatch, ValidatedAndRetainedReachedInOnePassTravelInOneMessage) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp is not available here");
  auto serve = Serve::Start("tcp");
  ASSERT_TRUE(serve);
  auto sender = NotifyingSender::Connect(serve->address(), "tcp");
  ASSERT_TRUE(sender.ok()) << sender.status().ToString();
  protocol::Announce a;
  a.delivery_id = "empty-batch";
  a.bytes = 0;
  a.chunk_size = 4096;
  a.rule = Rule::kXxh3_128;
  auto digest = vocabulary::DigestOf(Rule::kXxh3_128, {});
  ASSERT_TRUE(digest.ok());
  a.digest = *digest;
  a.until = Rung::kValidated;
  a.retention = RetentionClass::kVolatile;
  HostileOutcome out = (*sender)->Run(a, 20s);
  ASSERT_TRUE(out.refusals.empty()) << out.refusals[0].detail;
  ASSERT_FALSE(out.timed_out);
  ASSERT_GE(out.rungs.size(), 3u);
  EXPECT_EQ(out.rungs.back(), "retained");
  // `received` may come in an earlier pass (before the commit arrived); `validated` and
  // `retained` are issued in the same pass, so the last message carries both.
  ASSERT_FALSE(out.receipts_per_message.empty());
  EXPECT_GE(out.receipts_per_message.back(), 2u);
  EXPECT_EQ(out.rungs[out.rungs.size() - 2], "validated");
}

}  // namespace
}  // namespace writ::testing
