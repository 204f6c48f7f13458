#include <gtest/gtest.h>

#include <random>

#include "protocol/codec.h"
#include "protocol/frame.h"
#include "sample_messages.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

using testing::AllSamples;
using testing::RawFrame;

std::vector<uint8_t> StreamOfAllSamples() {
  std::vector<uint8_t> stream;
  for (const Message& m : AllSamples()) {
    const auto f = Encode(m);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  return stream;
}

// Drains every message the reader has; fails the test on an error.
void Drain(FrameReader& reader, std::vector<Message>& out) {
  for (;;) {
    auto next = reader.Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!next->has_value()) return;
    out.push_back(std::move(**next));
  }
}

TEST(FrameReader, OneByteAtATime) {
  const std::vector<uint8_t> stream = StreamOfAllSamples();
  FrameReader reader;
  std::vector<Message> got;
  for (uint8_t b : stream) {
    ASSERT_TRUE(reader.Feed(std::span(&b, 1)).ok());
    Drain(reader, got);
  }
  EXPECT_EQ(got, AllSamples());
  EXPECT_EQ(reader.buffered_bytes(), 0u);
}

TEST(FrameReader, RandomSplits) {
  const std::vector<uint8_t> stream = StreamOfAllSamples();
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    FrameReader reader;
    std::vector<Message> got;
    size_t pos = 0;
    while (pos < stream.size()) {
      const size_t max_piece = seed % 3 == 0 ? stream.size() : 40;
      const size_t n =
          std::min(stream.size() - pos, std::uniform_int_distribution<size_t>(0, max_piece)(rng));
      ASSERT_TRUE(reader.Feed(std::span(stream).subspan(pos, n)).ok());
      pos += n;
      // Sometimes leave messages queued across several feeds.
      if (rng() % 2 == 0) Drain(reader, got);
    }
    Drain(reader, got);
    EXPECT_EQ(got, AllSamples());
  }
}

TEST(FrameReader, IncompleteFrameYieldsNothing) {
  const auto frame = Encode(testing::SampleAnnounce());
  FrameReader reader;
  ASSERT_TRUE(reader.Feed(std::span(frame).first(frame.size() - 1)).ok());
  auto next = reader.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(reader.buffered_bytes(), frame.size() - 1);
  ASSERT_TRUE(reader.Feed(std::span(frame).last(1)).ok());
  next = reader.Next();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ(**next, Message(testing::SampleAnnounce()));
}

// A hostile peer declares a 4 GiB payload: refused as soon as the header is
// complete, before the payload is waited for, and nothing is reserved for it.
TEST(FrameReader, OversizeLengthRefusedOnFeedWithoutAllocating) {
  const auto frame = RawFrame(5, {}, kProtocolVersion, 0, 0xffffffffu);
  FrameReader reader;
  ASSERT_TRUE(reader.Feed(std::span(frame).first(kFrameHeaderBytes - 1)).ok());
  Status fed = reader.Feed(std::span(frame).subspan(kFrameHeaderBytes - 1, 1));
  EXPECT_ERROR(fed, ErrorCode::kMalformed, "frame.length: receipt payload of 4294967295 bytes");
  EXPECT_LT(reader.buffer_capacity(), 1024u);
  EXPECT_EQ(reader.buffered_bytes(), 0u);
}

TEST(FrameReader, ErrorsAreStickyAndGoodFramesBeforeThemArrive) {
  std::vector<uint8_t> stream = Encode(testing::SampleCommit());
  const auto bad = RawFrame(77, {1, 2, 3});
  stream.insert(stream.end(), bad.begin(), bad.end());
  const auto good = Encode(testing::SampleQuery());
  stream.insert(stream.end(), good.begin(), good.end());

  FrameReader reader;
  // The first frame is complete and fine; the bad header behind it is only
  // looked at once the reader gets to it.
  ASSERT_TRUE(reader.Feed(stream).ok());
  auto first = reader.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(**first, Message(testing::SampleCommit()));
  EXPECT_ERROR(reader.Next(), ErrorCode::kMalformed, "frame.type: unknown message type 77");
  EXPECT_ERROR(reader.Next(), ErrorCode::kMalformed, "frame.type: unknown message type 77");
  EXPECT_ERROR(reader.Feed(good), ErrorCode::kMalformed, "frame.type");
  EXPECT_EQ(reader.buffered_bytes(), 0u);
}

TEST(FrameReader, SemanticErrorInPayloadIsSticky) {
  Announce a = testing::SampleAnnounce();
  a.digest.resize(15);
  std::vector<uint8_t> stream = Encode(a);
  const auto good = Encode(testing::SampleCommit());
  stream.insert(stream.end(), good.begin(), good.end());
  FrameReader reader;
  ASSERT_TRUE(reader.Feed(stream).ok());
  EXPECT_ERROR(reader.Next(), ErrorCode::kMalformed,
               "announce.digest: 15 bytes, xxh3-128 needs 16");
  EXPECT_FALSE(reader.Next().ok());
}

TEST(FrameReader, BadMagicRefusedFromTheHeaderAlone) {
  FrameReader reader;
  const std::string junk = "SSH-2.0-OpenSSH_9.2\r\n";
  EXPECT_ERROR(reader.Feed(std::span(reinterpret_cast<const uint8_t*>(junk.data()), junk.size())),
               ErrorCode::kMalformed, "frame.magic");
}

TEST(FrameReader, BufferStaysBoundedOverALongStream) {
  const std::vector<uint8_t> stream = StreamOfAllSamples();
  FrameReader reader;
  std::vector<Message> got;
  for (int round = 0; round < 2000; ++round) {
    ASSERT_TRUE(reader.Feed(stream).ok());
    got.clear();
    Drain(reader, got);
    ASSERT_EQ(got.size(), AllSamples().size());
  }
  EXPECT_LE(reader.buffer_capacity(), 4 * stream.size());
}

TEST(FrameReader, CustomLimitsApply) {
  Limits limits;
  limits.max_id_bytes = 4;
  FrameReader reader(limits);
  ASSERT_TRUE(reader.Feed(Encode(testing::SampleCommit())).ok());
  EXPECT_ERROR(reader.Next(), ErrorCode::kMalformed, "commit.delivery_id: 6 bytes, limit 4");
}

}  // namespace
}  // namespace writ::protocol
