// A real DeliveryRun and a real receiver Connection in one process (tcp loopback) meeting
// faults FaultInjectingFabric injects: an error record on chunk k, the retry path
// (DeliveryOptions::max_attempts, `writ send --attempts`), -FI_EAGAIN storms, late and
// reordered records, the endpoint lost mid-delivery, and at the target a lost
// notification and a failed window registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "seam_rig.h"

namespace writ::seam {
namespace {

using namespace std::chrono_literals;
using fabric::WriteFault;
using fabric::WriteFaultSpec;

const std::vector<std::string> kEveryRung = {"transport", "received", "validated", "retained"};

// Every chunk of `out` has exactly one success record, and its portion names that request.
void ExpectEveryChunkSucceededOnce(const DeliveryOutcome& out) {
  std::map<uint64_t, int> successes;
  for (const auto& wc : out.work_completions) {
    if (wc.ok) ++successes[wc.chunk];
  }
  ASSERT_EQ(successes.size(), out.delivery.chunks);
  for (const auto& [chunk, count] : successes) EXPECT_EQ(count, 1) << "chunk " << chunk;
  for (uint64_t chunk = 0; chunk < out.delivery.chunks; ++chunk) {
    EXPECT_NE(out.portion_request_ids[chunk], 0u) << "chunk " << chunk;
  }
}

WriteFaultSpec ErrorRecord(int fi_errno, int prov_errno) {
  WriteFaultSpec spec;
  spec.fault = WriteFault::kErrorRecord;
  spec.fi_errno = fi_errno;
  spec.prov_errno = prov_errno;
  return spec;
}

TEST(DeliveryFaults, AnErrorRecordOnChunkKFailsThatChunkAndNoLaterRungIsClaimed) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(1).ok());
  rig.initiator().FailWrite(3, ErrorRecord(FI_EIO, 10));
  const auto bytes = Pattern(3, 6 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("chunk-k"));

  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  EXPECT_NE(out.status.message().find("chunk 3 failed: FI_EIO"), std::string::npos)
      << out.status.ToString();
  EXPECT_NE(out.status.message().find("after 1 attempt(s)"), std::string::npos);
  EXPECT_NE(out.status.message().find("last rung reached: none"), std::string::npos);
  ASSERT_EQ(out.work_completions.size(), 4u) << "one write at a time: chunks 4 and 5 never left";
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(out.work_completions[i].ok);
  const WorkCompletionRecord& failed = out.work_completions[3];
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.chunk, 3u);
  EXPECT_EQ(failed.status, "FI_EIO");
  EXPECT_EQ(failed.provider_errno, 10);
  EXPECT_NE(failed.provider_error.find("injected"), std::string::npos) << failed.provider_error;
  EXPECT_TRUE(out.receipts.empty()) << "not even the transport rung";
  EXPECT_TRUE(rig.broken());
  EXPECT_EQ(rig.initiator().counts().writes, 4u);
}

TEST(DeliveryFaults, ASecondAttemptAfterAnInjectedErrorSucceedsAndTheOutcomeShowsBoth) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(1).ok());
  rig.initiator().FailWrite(1, ErrorRecord(FI_ECANCELED, 0));
  SendOptions send;  // what `writ send --attempts 2 --chunk-size 64KiB --id retry` asks for
  send.id = "retry";
  send.chunk_size = 64 << 10;
  send.max_attempts = 2;
  const DeliveryOptions options = DeliveryOptionsOf(send);
  const auto bytes = Pattern(4, 4 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, options);

  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(RungsOf(out), kEveryRung);
  ASSERT_EQ(out.work_completions.size(), 5u);
  const WorkCompletionRecord& first = out.work_completions[1];
  const WorkCompletionRecord& second = out.work_completions[2];
  EXPECT_EQ(first.chunk, 1u);
  EXPECT_EQ(first.attempt, 1u);
  EXPECT_FALSE(first.ok);
  EXPECT_EQ(first.status, "FI_ECANCELED");
  EXPECT_EQ(second.chunk, 1u);
  EXPECT_EQ(second.attempt, 2u);
  EXPECT_TRUE(second.ok);
  EXPECT_NE(first.request_id, second.request_id) << "each attempt is its own request";
  EXPECT_EQ(out.portion_request_ids[1], second.request_id);
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_NE(out.receipts[0].statement.find("(5 completion records read)"), std::string::npos)
      << out.receipts[0].statement;
  // The delivery succeeded, but an error record was seen: the session is not trusted again.
  EXPECT_TRUE(rig.broken());
}

TEST(DeliveryFaults, WithOneAttemptTheSameFaultFailsTheDelivery) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(1).ok());
  rig.initiator().FailWrite(1, ErrorRecord(FI_ECANCELED, 0));
  const auto bytes = Pattern(4, 4 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("no-retry"));
  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  EXPECT_NE(out.status.message().find("chunk 1 failed"), std::string::npos);
  EXPECT_TRUE(out.receipts.empty());
}

// tcp drops the connection after an error record; when its FI_SHUTDOWN is read before the
// retry is posted, the retry is refused and the failure still names the chunk's own record.
TEST(DeliveryFaults, ARetryRefusedByAShutDownEndpointNamesTheChunksOwnErrorRecord) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(1).ok());
  rig.initiator().FailWrite(0, ErrorRecord(FI_ECANCELED, 0));
  rig.initiator().LoseEndpointAfterWrite(0);
  DeliveryOptions options = SmallChunks("refused-retry");
  options.max_attempts = 2;
  const DeliveryOutcome out = rig.Deliver(Pattern(3, 64 << 10), options);

  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  EXPECT_NE(out.status.message().find("chunk 0 failed: FI_ECANCELED"), std::string::npos)
      << out.status.ToString();
  EXPECT_NE(out.status.message().find("after 1 attempt(s); its retry could not be posted: "
                                      "endpoint was shut down (FI_SHUTDOWN)"),
            std::string::npos)
      << out.status.ToString();
  ASSERT_EQ(out.work_completions.size(), 1u) << "the refused retry has no record";
  EXPECT_EQ(out.work_completions[0].status, "FI_ECANCELED");
  EXPECT_EQ(out.work_completions[0].attempt, 1u);
  EXPECT_TRUE(out.receipts.empty());
  EXPECT_TRUE(rig.broken());
  EXPECT_EQ(rig.initiator().counts().endpoints_lost, 1u);
}

TEST(DeliveryFaults, AnEagainStormStillDeliversEveryChunkOnce) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.initiator().EagainStorm(200);
  const auto bytes = Pattern(5, 8 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("eagain"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(rig.initiator().counts().eagains, 200u);
  EXPECT_EQ(out.work_completions.size(), 8u);
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_EQ(RungsOf(out), kEveryRung);
}

TEST(DeliveryFaults, LateRecordsStillGiveEveryReceipt) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.initiator().DelayRecords(50);
  const auto bytes = Pattern(6, 8 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("late"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(rig.initiator().counts().records_delayed, 8u);
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_EQ(RungsOf(out), kEveryRung);
}

TEST(DeliveryFaults, ReorderedRecordsStillGiveEveryReceipt) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.initiator().ReorderRecords(4, 10000000);
  const auto bytes = Pattern(7, 8 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("reordered"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_GE(rig.initiator().counts().batches_reordered, 1u);
  std::vector<uint64_t> ids;
  for (const auto& wc : out.work_completions) ids.push_back(wc.request_id);
  EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end())) << "the run saw records out of order";
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_EQ(RungsOf(out), kEveryRung);
}

TEST(DeliveryFaults, AnEndpointLostMidDeliveryEndsItWithAClearErrorNotAStall) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.initiator().LoseEndpointAfterWrite(5);
  const auto bytes = Pattern(8, 8 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("shutdown"));
  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  EXPECT_NE(out.status.message().find("SHUTDOWN"), std::string::npos) << out.status.ToString();
  EXPECT_NE(out.status.message().find("last rung reached: none"), std::string::npos);
  EXPECT_TRUE(out.receipts.empty());
  EXPECT_TRUE(rig.broken());
  EXPECT_EQ(rig.initiator().counts().endpoints_lost, 1u);
  for (const auto& wc : out.work_completions) {
    if (!wc.ok) {
      EXPECT_EQ(wc.status, "FI_ESHUTDOWN");
    }
  }
}

TEST(DeliveryFaults, ACorruptedWriteIsReceivedButFailsValidation) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  WriteFaultSpec corrupt;
  corrupt.fault = WriteFault::kCorruptSource;
  rig.initiator().FailWrite(2, corrupt);
  const auto bytes = Pattern(11, 4 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("corrupted"));
  EXPECT_EQ(out.status.code(), ErrorCode::kValidation) << out.status.ToString();
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_EQ(RungsOf(out), (std::vector<std::string>{"transport", "received"}));
  EXPECT_FALSE(rig.broken()) << "a failed validation leaves the session usable";
}

// One flipped byte is refused `validation` whichever digest worker reads it: sequential and
// tree rules, one worker and four, the flip in the first chunk, in a middle leaf (digested
// apart from the others) and in the last, short leaf. The same bytes unflipped validate, and
// the validated receipt names the rule and, for a non-cryptographic one, what it resists.
TEST(DeliveryFaults, ACorruptedChunkFailsValidationWhicheverDigestWorkerReadsIt) {
  for (uint32_t threads : {1u, 4u}) {
    SeamRig rig("tcp");
    ReceiverOptions options;
    options.digest_threads = threads;
    SEAM_START(rig, options);
    ASSERT_TRUE(rig.Connect(4).ok());
    const auto bytes = Pattern(17, 4 * (1 << 20) + 4099);  // 5 leaves; 17 chunks of 256 KiB
    for (Rule rule : {Rule::kXxh3_128, Rule::kXxh3_128Tree1MiB, Rule::kSha256Tree1MiB}) {
      const std::string name = std::string(RuleName(rule)) + "-" + std::to_string(threads);
      for (uint64_t chunk : {0u, 9u, 16u}) {
        WriteFaultSpec corrupt;
        corrupt.fault = WriteFault::kCorruptSource;
        rig.initiator().FailWrite(rig.initiator().counts().writes + chunk, corrupt);
        DeliveryOptions o = SmallChunks(name + "-bad-" + std::to_string(chunk), 256 << 10);
        o.rule = rule;
        const DeliveryOutcome out = rig.Deliver(bytes, o);
        EXPECT_EQ(out.status.code(), ErrorCode::kValidation)
            << name << ", chunk " << chunk << ": " << out.status.ToString();
        EXPECT_EQ(RungsOf(out), (std::vector<std::string>{"transport", "received"}));
      }
      DeliveryOptions o = SmallChunks(name + "-good", 256 << 10);
      o.rule = rule;
      const DeliveryOutcome out = rig.Deliver(bytes, o);
      ASSERT_TRUE(out.status.ok()) << name << ": " << out.status.ToString();
      ASSERT_EQ(RungsOf(out), kEveryRung);
      const Receipt& validated = out.receipts[2];
      EXPECT_EQ(validated.delivery.rule, RuleName(rule));
      EXPECT_EQ(validated.does_not_establish.find("detects accidental corruption, not a hostile "
                                                  "sender") != std::string::npos,
                !IsCryptographic(rule))
          << validated.does_not_establish;
    }
  }
}

TEST(ReceiverFaults, ALostNotificationMeansNoReceivedReceiptAndARefusal) {
  SeamRig rig("tcp");
  ReceiverOptions options;
  options.grant_unused_timeout = 1500ms;
  SEAM_START(rig, options);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.target().DropNotification(1);
  // Two chunks: two one-chunk windows (the tail shrinks), both in the rig's two-window pool,
  // so every chunk is written although one window never completes.
  const auto bytes = Pattern(9, 2 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(bytes, SmallChunks("unnotified"));
  EXPECT_EQ(out.status.code(), ErrorCode::kRefused) << out.status.ToString();
  EXPECT_NE(out.status.message().find("grant-unused timeout"), std::string::npos)
      << out.status.ToString();
  ExpectEveryChunkSucceededOnce(out);
  EXPECT_EQ(RungsOf(out), std::vector<std::string>{"transport"})
      << "the initiator's success is never read as placement";
  EXPECT_EQ(rig.target().counts().notifications_dropped, 1u);
  EXPECT_FALSE(rig.broken());
}

TEST(ReceiverFaults, AFailedWindowRegistrationIsRefusedAndTheSessionGoesOn) {
  SeamRig rig("tcp");
  SEAM_START(rig);
  ASSERT_TRUE(rig.Connect(4).ok());
  rig.target().FailRegistration(0);
  const auto bytes = Pattern(10, 4 * (64 << 10));
  const DeliveryOutcome refused = rig.Deliver(bytes, SmallChunks("unregistered"));
  EXPECT_EQ(refused.status.code(), ErrorCode::kRefused) << refused.status.ToString();
  EXPECT_NE(refused.status.message().find("injected"), std::string::npos);
  EXPECT_TRUE(refused.receipts.empty());
  EXPECT_TRUE(refused.work_completions.empty()) << "no window, no write";
  ASSERT_FALSE(rig.broken());

  const DeliveryOutcome next = rig.Deliver(bytes, SmallChunks("registered"));
  ASSERT_TRUE(next.status.ok()) << next.status.ToString();
  EXPECT_EQ(RungsOf(next), kEveryRung);
  EXPECT_EQ(rig.target().counts().registrations_failed, 1u);
}

}  // namespace
}  // namespace writ::seam
