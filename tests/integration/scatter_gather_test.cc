// Scatter-gather deliveries against a real `writ serve --data`: 1,000 regions of 4 KiB,
// every other page of a buffer, arrive as one object whose digest is the concatenation's,
// and `writ store cat ID --region K` gives region K back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/hex.h"
#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "provider_matrix.h"
#include "random_bytes.h"
#include "requirement.h"
#include "vocabulary/digest.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;
constexpr size_t kPage = 4096;
constexpr size_t kRegions = 1000;

class ScatterGather : public ::testing::TestWithParam<std::string> {};

TEST_P(ScatterGather, AThousandPagesArriveAsOneObjectReadableRegionByRegion) {
  REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                  "provider " << GetParam() << " cannot serve on this machine");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::Start(GetParam(), {"--data", data});
  ASSERT_TRUE(serve);

  // Every other page of a 2,000-page buffer: no two regions are adjacent.
  const std::vector<uint8_t> buffer = RandomBytes(2026, 2 * kRegions * kPage);
  std::vector<Region> regions;
  std::vector<uint8_t> concat;
  for (size_t k = 0; k < kRegions; ++k) {
    const uint8_t* page = buffer.data() + 2 * k * kPage;
    regions.push_back(Region{page, kPage});
    concat.insert(concat.end(), page, page + kPage);
  }
  auto expected = vocabulary::DigestOf(Rule::kXxh3_128, concat);
  ASSERT_TRUE(expected.ok());

  SendOptions options;
  options.to = serve->address();
  options.id = "sg-1000";
  options.chunk_size = 300000;  // chunk edges fall inside regions
  options.retention = RetentionClass::kProcessRestart;
  options.stall_timeout = 20s;
  const DeliveryOutcome out = SendRegions(regions, options);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.delivery.bytes, kRegions * kPage);
  EXPECT_EQ(out.delivery.digest, writ::ToHex(*expected)) << "the concatenation's digest";
  EXPECT_EQ(out.delivery.chunks, (kRegions * kPage + 299999) / 300000);
  EXPECT_EQ(out.source_path, "staging");
  EXPECT_NE(out.source_note.find("scatter-gather"), std::string::npos) << out.source_note;
  ASSERT_TRUE(out.reached_retention);
  for (const Receipt& r : out.receipts) EXPECT_EQ(r.delivery.digest, out.delivery.digest);

  const CommandRun ls = RunWrit({"store", "ls", "--data", data, "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.json["deliveries"][0]["regions"], kRegions);
  const CommandRun whole = RunWrit({"store", "cat", "sg-1000", "--data", data});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_TRUE(whole.out == std::string(concat.begin(), concat.end()));
  for (size_t k : {size_t{0}, size_t{1}, size_t{73}, size_t{500}, kRegions - 1}) {
    const CommandRun cat =
        RunWrit({"store", "cat", "sg-1000", "--data", data, "--region", std::to_string(k)});
    ASSERT_EQ(cat.exit_code, 0) << k << ": " << cat.err;
    const uint8_t* page = buffer.data() + 2 * k * kPage;
    EXPECT_TRUE(cat.out == std::string(page, page + kPage)) << "region " << k;
  }
  const CommandRun past =
      RunWrit({"store", "cat", "sg-1000", "--data", data, "--region", std::to_string(kRegions)});
  EXPECT_NE(past.exit_code, 0);
  EXPECT_NE(past.err.find("has 1000 regions"), std::string::npos) << past.err;
  EXPECT_TRUE(past.out.empty());
}

// Regions of at least 256 KiB are registered and written from without a copy, in gathered
// writes of up to the provider's iov_limit pieces (chunk edges cut regions here, so some
// writes gather two); the small region's chunks are staged. Same digest, same regions back.
TEST_P(ScatterGather, LargeRegionsAreWrittenFromWhereTheyLie) {
  REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                  "provider " << GetParam() << " cannot serve on this machine");
  TempDir dir;
  const std::string data = dir.File("data");
  auto serve = Serve::Start(GetParam(), {"--data", data});
  ASSERT_TRUE(serve);
  const std::vector<uint8_t> buffer = RandomBytes(15, 8 << 20);
  const std::vector<std::pair<size_t, size_t>> cuts = {{0, (1 << 20) + 100},
                                                       {(2 << 20), 4096},
                                                       {(3 << 20) + 7, 1 << 20},
                                                       {0, 0},
                                                       {(5 << 20) + 1, (512 << 10) + 17}};
  std::vector<Region> regions;
  std::vector<uint8_t> concat;
  for (const auto& [at, n] : cuts) {
    regions.push_back(Region{n ? buffer.data() + at : nullptr, n});
    concat.insert(concat.end(), buffer.begin() + at, buffer.begin() + at + n);
  }
  auto expected = vocabulary::DigestOf(Rule::kXxh3_128, concat);
  ASSERT_TRUE(expected.ok());
  SendOptions options;
  options.to = serve->address();
  options.id = "sg-large";
  options.chunk_size = 300000;
  options.retention = RetentionClass::kProcessRestart;
  options.stall_timeout = 20s;
  const DeliveryOutcome out = SendRegions(regions, options);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.delivery.digest, writ::ToHex(*expected));
  EXPECT_NE(out.source_note.find("3 of 4 regions registered"), std::string::npos)
      << out.source_note;
  for (size_t k = 0; k < cuts.size(); ++k) {
    const CommandRun cat =
        RunWrit({"store", "cat", "sg-large", "--data", data, "--region", std::to_string(k)});
    ASSERT_EQ(cat.exit_code, 0) << k << ": " << cat.err;
    const auto& [at, n] = cuts[k];
    EXPECT_TRUE(cat.out == std::string(buffer.begin() + at, buffer.begin() + at + n)) << k;
  }
  // Every region registered: the whole delivery is zero-copy.
  const std::vector<Region> large = {regions[0], regions[2]};
  options.id = "sg-all-large";
  const DeliveryOutcome all = SendRegions(large, options);
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  EXPECT_EQ(all.source_path, "zero-copy") << all.source_note;
  std::vector<uint8_t> both(concat.begin(), concat.begin() + cuts[0].second);
  both.insert(both.end(), buffer.begin() + cuts[2].first,
              buffer.begin() + cuts[2].first + cuts[2].second);
  EXPECT_EQ(all.delivery.digest, writ::ToHex(*vocabulary::DigestOf(Rule::kXxh3_128, both)));
}

// Written past the sender's own checks (ControlChannel::Send validates what it sends): a
// region table whose lengths do not add up to the announced bytes is refused as malformed.
TEST(ScatterGatherWire, ATableThatDoesNotAddUpIsRefusedAsMalformed) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  auto serve = Serve::Start("tcp");
  ASSERT_TRUE(serve);
  auto hp = protocol::ParseHostPort(serve->address());
  ASSERT_TRUE(hp.ok());
  auto channel = protocol::ControlChannel::Connect(hp->first, hp->second, 10s);
  ASSERT_TRUE(channel.ok()) << channel.status().ToString();
  auto hello = channel->Receive(10s);
  ASSERT_TRUE(hello.ok() && std::holds_alternative<protocol::Hello>(*hello))
      << (hello.ok() ? protocol::MessageTypeName(*hello) : hello.status().ToString());
  protocol::Announce a;
  a.delivery_id = "sg-bad";
  a.bytes = 8192;
  a.chunk_size = 4096;
  a.region_lengths = {4096, 4095};
  const std::vector<uint8_t> frame = protocol::Encode(a);
  ASSERT_EQ(::write(channel->fd(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  auto answer = channel->Receive(10s);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  const auto* refusal = std::get_if<protocol::Refuse>(&*answer);
  ASSERT_NE(refusal, nullptr) << protocol::MessageTypeName(*answer);
  EXPECT_EQ(refusal->reason, protocol::RefuseReason::kMalformed);
  EXPECT_NE(refusal->detail.find("announce.region_lengths: the regions add up to 8191 bytes"),
            std::string::npos)
      << refusal->detail;
}

INSTANTIATE_TEST_SUITE_P(Providers, ScatterGather, ::testing::ValuesIn(LoopbackProviderNames()),
                         ProviderName);

}  // namespace
}  // namespace writ::testing
