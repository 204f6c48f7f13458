// Receiver::ReadRegion against a receiver in this process: a scatter-gather delivery with
// zero-length regions among its regions reads back region by region; a plain delivery is
// one region; a region past the table, an unknown id and an over-long region are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "random_bytes.h"
#include "requirement.h"
#include "writ/receiver.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ {
namespace {

using namespace std::chrono_literals;

class ReadRegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(testing::ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    ReceiverOptions options;
    options.provider = "tcp";
    options.identity_dir = dir_.File("receiver");
    auto receiver = Receiver::Start(options);
    ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
    receiver_ = std::move(receiver).value();
  }
  void TearDown() override {
    if (receiver_) {
      EXPECT_TRUE(receiver_->Stop().ok());
    }
  }
  SendOptions Options(const std::string& id) const {
    SendOptions send;
    send.to = receiver_->listen_address();
    send.id = id;
    send.chunk_size = 4096;
    send.retention = RetentionClass::kVolatile;
    send.stall_timeout = 20s;
    return send;
  }

  testing::TempDir dir_;
  std::unique_ptr<Receiver> receiver_;
};

TEST_F(ReadRegionTest, ZeroLengthRegionsKeepTheirPlaceAndReadBackEmpty) {
  const std::vector<uint8_t> a = testing::RandomBytes(1, 100), b = testing::RandomBytes(2, 9000);
  const std::vector<Region> regions = {
      {a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}, {a.data(), 0}};
  const DeliveryOutcome out = SendRegions(regions, Options("sg-zero"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.delivery.bytes, a.size() + b.size());

  auto r0 = receiver_->ReadRegion("sg-zero", 0);
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  EXPECT_EQ(*r0, a);
  auto r1 = receiver_->ReadRegion("sg-zero", 1);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_TRUE(r1->empty());
  auto r2 = receiver_->ReadRegion("sg-zero", 2);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(*r2, b);
  auto r3 = receiver_->ReadRegion("sg-zero", 3);
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  EXPECT_TRUE(r3->empty());
  EXPECT_EQ(receiver_->ReadRegion("sg-zero", 4).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(receiver_->ReadRegion("sg-zero", 2, 8999).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(receiver_->ReadRegion("nobody", 0).status().code(), ErrorCode::kNotFound);
}

TEST_F(ReadRegionTest, APlainDeliveryIsOneRegion) {
  const std::vector<uint8_t> bytes = testing::RandomBytes(3, 20000);
  const std::vector<Region> one = {{bytes.data(), bytes.size()}};
  const DeliveryOutcome out = SendRegions(one, Options("sg-one"));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  auto r0 = receiver_->ReadRegion("sg-one", 0);
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  EXPECT_EQ(*r0, bytes);

  auto session = Sender::Connect(SessionOptionsOf(Options("plain")));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const DeliveryOutcome plain = (*session)->SendBytes(bytes, DeliveryOptionsOf(Options("plain")));
  ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();
  auto whole = receiver_->ReadRegion("plain", 0);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, bytes);
  EXPECT_EQ(receiver_->ReadRegion("plain", 1).status().code(), ErrorCode::kNotFound);
  // The same bytes as a plain delivery and as one region: the same digest.
  EXPECT_EQ(plain.delivery.digest, out.delivery.digest);
}

}  // namespace
}  // namespace writ
