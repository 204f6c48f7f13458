// Whole deliveries in one process over the MemoryFabric: every rung with receipts that
// verify, many deliveries over one link, and what the fabric itself did.
#include <gtest/gtest.h>

#include "memory_rig.h"

namespace writ::inprocess {
namespace {

const std::vector<std::string> kRungsToRetained = {"transport", "received", "validated",
                                                   "retained"};

DeliveryOptions ValidatedVolatile(const std::string& id, uint64_t chunk_size = 64 << 10) {
  DeliveryOptions options;
  options.id = id;
  options.chunk_size = chunk_size;
  options.until = Rung::kValidated;
  options.retention = RetentionClass::kVolatile;
  return options;
}

TEST(MemoryDelivery, AWholeDeliveryReachesValidatedAndRetainedWithReceiptsThatVerify) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  EXPECT_EQ((*link)->hello().provider, "memory");

  const auto bytes = PatternBytes(1, 5 * (64 << 10) + 123);
  const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile("whole"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(RungNames(out), kRungsToRetained);
  EXPECT_EQ(out.reached_retention, RetentionClass::kVolatile);
  const std::string key = rig.receiver().public_key_hex();
  for (const Receipt& r : out.receipts) {
    // The transport rung is the sender's own (unsigned without an identity); every rung
    // the receiver claims is signed by its key.
    if (r.rung == ReceiptRung::kTransport) continue;
    EXPECT_TRUE(VerifyReceipt(r, key).ok()) << ReceiptRungName(r.rung);
  }

  std::vector<uint8_t> held(bytes.size());
  ASSERT_TRUE(rig.receiver().Read("whole", 0, held).ok());
  EXPECT_EQ(held, bytes);
  const fabric::MemoryFabricCounts counts = rig.fabric().counts();
  EXPECT_EQ(counts.writes, 6u);
  EXPECT_EQ(counts.bytes_placed, bytes.size());
  EXPECT_EQ(counts.notifications, 6u);
  EXPECT_EQ(counts.access_errors, 0u);
}

TEST(MemoryDelivery, SmallDeliveriesOneAfterAnotherAllReachRetained) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  auto link = rig.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  for (int i = 0; i < 20; ++i) {
    const auto bytes = PatternBytes(100 + i, 4096);
    const std::string id = "small-" + std::to_string(i);
    const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile(id));
    ASSERT_TRUE(out.status.ok()) << id << ": " << out.status.ToString();
    EXPECT_EQ(RungNames(out), kRungsToRetained) << id;
    std::vector<uint8_t> held(bytes.size());
    ASSERT_TRUE(rig.receiver().Read(id, 0, held).ok()) << id;
    EXPECT_EQ(held, bytes) << id;
  }
}

TEST(MemoryDelivery, AWrongKeyIsAnErrorRecordAtTheWriterAndNothingIsClaimed) {
  MemoryRig rig;
  ASSERT_TRUE(rig.Start(rig.BaseOptions()).ok());
  fabric::FaultInjectingFabric* initiator = nullptr;
  SessionOptions one_write;  // chunk 1 is never posted after chunk 0's error
  one_write.depth = 1;
  auto link = rig.OpenLink(one_write, [&](fabric::FaultInjectingFabric& f) { initiator = &f; });
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  fabric::WriteFaultSpec wrong_key;
  wrong_key.fault = fabric::WriteFault::kWrongKey;
  initiator->FailWrite(0, wrong_key);

  const auto bytes = PatternBytes(2, 2 * (64 << 10));
  const DeliveryOutcome out = rig.Deliver(**link, bytes, ValidatedVolatile("wrong-key"));
  EXPECT_EQ(out.status.code(), ErrorCode::kTransport) << out.status.ToString();
  ASSERT_FALSE(out.work_completions.empty());
  EXPECT_FALSE(out.work_completions.front().ok);
  EXPECT_EQ(out.work_completions.front().status, "FI_EIO");
  EXPECT_EQ(out.work_completions.front().provider_errno, 10);
  EXPECT_TRUE(out.receipts.empty()) << "not even the transport rung";
  EXPECT_EQ(rig.fabric().counts().access_errors, 1u);
  EXPECT_EQ(rig.fabric().counts().notifications, 0u);
}

}  // namespace
}  // namespace writ::inprocess
