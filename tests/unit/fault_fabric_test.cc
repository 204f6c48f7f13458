// FaultInjectingFabric on its own, wrapping a real tcp target node: the records it
// synthesizes keep WorkCompletion's guarantees, and each fault does what it names.
#include "fabric/fault_fabric.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "fabric/node.h"
#include "requirement.h"

namespace writ::fabric {
namespace {

class FaultFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeOptions options;
    options.provider.provider = "tcp";
    options.provider.role = Role::kTarget;
    options.provider.node = "127.0.0.1";
    options.provider.service = "0";
    auto node = OpenFabricNode(options);
    REQUIRE_OR_FAIL(node.ok(), "the tcp provider cannot open here: " << node.status().ToString());
    port_ = std::make_unique<FaultInjectingFabric>(std::move(node).value());
  }

  // A write the decorator answers itself (never reaches the provider).
  Result<PostedWrite> Post(uint64_t request_id) {
    WriteRequest request;
    request.request_id = request_id;
    request.peer.endpoint = 7;
    return port_->PostWrite(request);
  }

  std::vector<WorkCompletion> PollOnce() {
    std::vector<WorkCompletion> out;
    auto polled = port_->Poll(out);
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    return out;
  }

  static WriteFaultSpec Fault(WriteFault fault, int fi_errno = FI_ECANCELED) {
    WriteFaultSpec spec;
    spec.fault = fault;
    spec.fi_errno = fi_errno;
    spec.prov_errno = 10;
    return spec;
  }

  std::unique_ptr<FaultInjectingFabric> port_;
};

TEST_F(FaultFabricTest, AnInjectedErrorRecordHoldsOnlyTheFourValidFields) {
  port_->FailWrite(0, Fault(WriteFault::kErrorRecord, FI_EIO));
  ASSERT_TRUE(Post(41).ok());
  const auto records = PollOnce();
  ASSERT_EQ(records.size(), 1u);
  const WorkCompletion& wc = records[0];
  EXPECT_FALSE(wc.ok());
  EXPECT_EQ(wc.request_id(), 41u);
  EXPECT_EQ(wc.endpoint(), 7u);
  EXPECT_EQ(wc.status().Name(), "FI_EIO");
  auto provider_error = wc.provider_error();
  ASSERT_TRUE(provider_error.ok());
  EXPECT_EQ(provider_error->prov_errno, 10);
  EXPECT_NE(provider_error->text.find("injected"), std::string::npos);
  EXPECT_EQ(wc.operation().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.flags().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.length().status().code(), ErrorCode::kWrongRecord);
  EXPECT_EQ(wc.remote_data().status().code(), ErrorCode::kWrongRecord);
}

TEST_F(FaultFabricTest, ASuccessNotPlacedIsAWriteRecordWithoutLengthOrData) {
  port_->FailWrite(0, Fault(WriteFault::kSuccessNotPlaced));
  ASSERT_TRUE(Post(1).ok());
  const auto records = PollOnce();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].ok());
  ASSERT_TRUE(records[0].operation().ok());
  EXPECT_EQ(*records[0].operation(), Operation::kWrite);
  EXPECT_FALSE(records[0].length().ok());
  EXPECT_FALSE(records[0].remote_data().ok());
  EXPECT_EQ(port_->counts().writes_forwarded, 0u);
}

TEST_F(FaultFabricTest, ASwallowedWriteNeverHasARecord) {
  port_->FailWrite(0, Fault(WriteFault::kNoRecord));
  ASSERT_TRUE(Post(1).ok());
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(PollOnce().empty());
  EXPECT_EQ(port_->counts().records_swallowed, 1u);
}

TEST_F(FaultFabricTest, DelayedRecordsComeAfterThatManyPolls) {
  port_->DelayRecords(3);
  port_->FailWrite(0, Fault(WriteFault::kSuccessNotPlaced));
  ASSERT_TRUE(Post(1).ok());
  EXPECT_TRUE(PollOnce().empty());
  EXPECT_TRUE(PollOnce().empty());
  std::vector<pollfd> fds;
  auto prepared = port_->PrepareWait(fds);
  ASSERT_TRUE(prepared.ok());
  EXPECT_FALSE(*prepared) << "a record is held: the caller must poll, not block";
  EXPECT_EQ(PollOnce().size(), 1u);
  EXPECT_EQ(port_->counts().records_delayed, 1u);
}

TEST_F(FaultFabricTest, ReorderedRecordsComeNewestFirst) {
  port_->ReorderRecords(3, 1000);
  for (uint64_t ordinal = 0; ordinal < 3; ++ordinal) {
    port_->FailWrite(ordinal, Fault(WriteFault::kSuccessNotPlaced));
  }
  ASSERT_TRUE(Post(1).ok());
  ASSERT_TRUE(Post(2).ok());
  EXPECT_TRUE(PollOnce().empty()) << "held until the batch is full";
  ASSERT_TRUE(Post(3).ok());
  const auto records = PollOnce();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].request_id(), 3u);
  EXPECT_EQ(records[1].request_id(), 2u);
  EXPECT_EQ(records[2].request_id(), 1u);
  EXPECT_EQ(port_->counts().batches_reordered, 1u);
}

TEST_F(FaultFabricTest, AfterAnErrorEveryLaterWriteIsCancelled) {
  port_->CancelWritesAfterError();
  port_->FailWrite(0, Fault(WriteFault::kErrorRecord, FI_EIO));
  ASSERT_TRUE(Post(1).ok());
  ASSERT_TRUE(Post(2).ok());
  const auto records = PollOnce();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status().Name(), "FI_EIO");
  EXPECT_EQ(records[1].status().Name(), "FI_ECANCELED");
  EXPECT_EQ(records[1].request_id(), 2u);
}

TEST_F(FaultFabricTest, AnEagainStormProgressesThePortAndThenPosts) {
  port_->EagainStorm(5);
  port_->FailWrite(0, Fault(WriteFault::kSuccessNotPlaced));
  ASSERT_TRUE(Post(1).ok());
  EXPECT_EQ(port_->counts().eagains, 5u);
  EXPECT_EQ(PollOnce().size(), 1u);
}

TEST_F(FaultFabricTest, AWriteAfterTheEndpointWasLostFailsAsFabricNodesDo) {
  port_->LoseEndpointAfterWrite(0);
  port_->FailWrite(0, Fault(WriteFault::kSuccessNotPlaced));
  ASSERT_TRUE(Post(1).ok());
  auto later = Post(2);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.status().code(), ErrorCode::kTransport);
  EXPECT_NE(later.status().message().find("FI_SHUTDOWN"), std::string::npos);
  EXPECT_EQ(port_->counts().endpoints_lost, 1u);
}

TEST_F(FaultFabricTest, OnlyTheChosenRegistrationFails) {
  std::vector<uint8_t> buffer(4096);
  port_->FailRegistration(1);
  auto first = port_->Register(buffer.data(), buffer.size(), Access::kRemoteWrite);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = port_->Register(buffer.data(), buffer.size(), Access::kRemoteWrite);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("injected"), std::string::npos);
  auto third = port_->Register(buffer.data(), buffer.size(), Access::kRemoteWrite);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

}  // namespace
}  // namespace writ::fabric
