// Page-list deliveries into a paged exposed target (DeliveryOptions::target_pages; issue
// 32): delivery byte i * page_size lands in page pages[i], one digest over the bytes in list
// order, one receipt set naming the pages. Each test asserts where the bytes landed (read
// back from the application's buffer), what the sender was told and what the callback heard.
#include <gtest/gtest.h>

#include "exposed_support.h"
#include "protocol/codec.h"
#include "receiver/target_pages.h"

namespace writ::inprocess {
namespace {

constexpr uint64_t kKvPage = 16 << 10;
constexpr uint64_t kKvPages = 64;  // 1 MiB: the whole buffer

DeliveryOptions IntoPages(const std::string& id, std::vector<uint64_t> pages) {
  DeliveryOptions options = Into(id, "kv", 0);
  options.target_pages = std::move(pages);
  return options;
}

std::span<const uint8_t> PageOf(const std::vector<uint8_t>& buffer, uint64_t page) {
  return std::span(buffer).subspan(page * kKvPage, kKvPage);
}

class ExposedTargetPages : public ::testing::Test {
 protected:
  void SetUp() override {
    Status started = rig_.Start(rig_.BaseOptions());
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  // Exposes the buffer as kKvPages pages of kKvPage bytes.
  void ExposePaged() {
    ExposeOptions options = Listening(heard_);
    options.pages = PageGeometry{kKvPage, kKvPages};
    ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_, std::move(options)).ok());
  }
  std::unique_ptr<RawPeer> Peer() {
    auto peer = RawPeer::Open(rig_);
    EXPECT_TRUE(peer.ok()) << peer.status().ToString();
    return peer.ok() ? std::move(peer).value() : nullptr;
  }
  // A page-list announce from `peer`, one chunk per page unless `chunk` says otherwise.
  protocol::Announce PagesAnnounce(RawPeer& peer, const std::string& id, uint64_t bytes,
                                   std::vector<uint64_t> pages, uint64_t chunk = kKvPage) {
    protocol::Announce a = peer.AnnounceOf(id, bytes, std::min(bytes, chunk));
    a.target = "kv";
    a.target_pages = std::move(pages);
    return a;
  }
  // Announces `pages` by hand and returns what the peer saw.
  PeerSaw Announced(RawPeer& peer, const std::string& id, uint64_t bytes,
                    std::vector<uint64_t> pages, uint64_t chunk = kKvPage) {
    EXPECT_TRUE(peer.Send(PagesAnnounce(peer, id, bytes, std::move(pages), chunk)).ok());
    return peer.Watch(id, kExposedWatch);
  }

  // Declared before the rig, so destroyed after it: a delivery still in flight when a test
  // ends is ended by the rig's stop, which tells the callback and may clear its range.
  std::vector<uint8_t> buffer_ = std::vector<uint8_t>(kKvPages * kKvPage, 0);
  Heard heard_;
  MemoryRig rig_;
};

TEST_F(ExposedTargetPages, APageListLandsInItsPagesInListOrderValidatedInPlace) {
  ExposePaged();
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const std::vector<uint64_t> pages = {9, 3, 4, 40};
  const auto bytes = PatternBytes(11, pages.size() * kKvPage);
  const DeliveryOutcome out = rig_.Deliver(**link, bytes, IntoPages("blocks", pages));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();

  for (size_t i = 0; i < pages.size(); ++i) {
    const auto sent = std::span(bytes).subspan(i * kKvPage, kKvPage);
    const auto page = PageOf(buffer_, pages[i]);
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), page.begin())) << "page " << pages[i];
  }
  for (uint64_t p : {0, 2, 5, 8, 10, 39, 41, 63}) {
    EXPECT_TRUE(AllZero(PageOf(buffer_, p))) << "page " << p << " was not in the list";
  }
  EXPECT_EQ(rig_.fabric().counts().bytes_placed, bytes.size());
  EXPECT_EQ(out.delivery.chunk_size, kKvPage) << "the sender's 64 KiB chunk was not lowered";

  EXPECT_EQ(RungNames(out),
            (std::vector<std::string>{"transport", "received", "validated", "retained"}));
  const std::string where = "kv, pages 9, 3-4, 40 of 16384 bytes";
  for (const Receipt& r : out.receipts) {
    if (r.rung == ReceiptRung::kTransport) continue;
    EXPECT_TRUE(VerifyReceipt(r, rig_.receiver().public_key_hex()).ok());
    if (r.rung == ReceiptRung::kRetained) {
      ASSERT_TRUE(r.retention.has_value());
      EXPECT_EQ(r.retention->acknowledged_point, "in the application's buffer " + where);
    } else {
      EXPECT_NE(r.statement.find("the application's buffer " + where), std::string::npos)
          << r.statement;
    }
  }
  std::vector<uint8_t> held(16);
  EXPECT_EQ(rig_.receiver().Read("blocks", 0, held).code(), ErrorCode::kNotFound);

  ASSERT_EQ(heard_.AwaitCount(1), 1u);
  const TargetDelivery told = heard_.at(0);
  EXPECT_TRUE(told.ok) << told.why;
  EXPECT_EQ(told.pages, pages);
  EXPECT_EQ(told.bytes, bytes.size());
}

// The receiver copies nothing into the application's buffer: every window was the buffer,
// so its bytes are consumed where they landed, and the metrics say so (issue 32's bench
// reads these counters).
TEST_F(ExposedTargetPages, APageListIsConsumedWhereItLandedAndCountedAsNoCopy) {
  ExposePaged();
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const auto bytes = PatternBytes(16, 4 * kKvPage);
  const DeliveryOutcome out = rig_.Deliver(**link, bytes, IntoPages("in-place", {9, 3, 4, 40}));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  const std::string text = rig_.receiver().MetricsText();
  EXPECT_NE(text.find("writ_exposed_bytes_total{how=\"copied\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("writ_exposed_bytes_total{how=\"in_place\"} " + std::to_string(bytes.size()) +
                      "\n"),
            std::string::npos)
      << text;
  // Pages 9 | 3-4 | 40: three breaks in the buffer, a window (a registration) each at least.
  const std::string sample = "\nwrit_windows_registered_total ";  // not its HELP line
  const size_t at = text.find(sample);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GE(std::stoull(text.substr(at + sample.size())), 3u);
}

// One registration per window, and a window never spans a break in the list: eight pages
// apart take eight windows, eight adjacent pages the four a delivery at an offset takes
// (the halving rule: 4 + 2 + 1 + 1 chunks).
TEST_F(ExposedTargetPages, AWindowNeverSpansABreakInThePageList) {
  ExposePaged();
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const auto bytes = PatternBytes(12, 8 * kKvPage);
  // What a connection registers once (the sender's staging, the ring it earns) comes first.
  ASSERT_TRUE(rig_.Deliver(**link, PatternBytes(15, kKvPage), IntoPages("warm", {63})).status.ok());
  const auto registered = [&](const DeliveryOptions& options) {
    const uint64_t before = rig_.fabric().counts().registrations;
    const DeliveryOutcome out = rig_.Deliver(**link, bytes, options);
    EXPECT_TRUE(out.status.ok()) << options.id << ": " << out.status.ToString();
    return rig_.fabric().counts().registrations - before;
  };
  DeliveryOptions offset = Into("at-offset", "kv", 32 * kKvPage);
  offset.chunk_size = kKvPage;  // as a page list's
  const uint64_t at_offset = registered(offset);
  const uint64_t apart = registered(IntoPages("apart", {0, 2, 4, 6, 8, 10, 12, 14}));
  const uint64_t adjacent = registered(IntoPages("adjacent", {16, 17, 18, 19, 20, 21, 22, 23}));
  // The sender registers the same for each: the differences are the receiver's windows.
  EXPECT_EQ(adjacent, at_offset);
  EXPECT_EQ(apart - at_offset, 8u - 4u);
  for (uint64_t i = 0; i < 8; ++i) {
    const auto sent = std::span(bytes).subspan(i * kKvPage, kKvPage);
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), PageOf(buffer_, 2 * i).begin()));
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), PageOf(buffer_, 16 + i).begin()));
  }
}

TEST_F(ExposedTargetPages, APageListIntoATargetWithoutGeometryIsRefused) {
  ASSERT_TRUE(rig_.receiver().Expose("kv", buffer_).ok());
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "flat", kKvPage, {1});
  ExpectTargetRefusal(saw, "target kv has no page geometry");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTargetPages, APageOutsideTheTargetIsRefused) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "past-end", 2 * kKvPage, {3, kKvPages});
  ExpectTargetRefusal(saw, "page 64 (at 1 in the list) is outside target kv's 64 pages");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTargetPages, APageListedTwiceIsRefused) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "twice", 3 * kKvPage, {7, 2, 7});
  ExpectTargetRefusal(saw, "page 7 of target kv is listed twice (at 0 and 2 in the list)");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTargetPages, ASizeOtherThanPagesTimesThePageSizeIsRefused) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  PeerSaw saw = Announced(*peer, "short", 2 * kKvPage - 4096, {1, 2}, 4096);
  ExpectTargetRefusal(saw, "a delivery of 28672 bytes is not its 2 pages of target kv (2 x 16384");
  EXPECT_TRUE(saw.grants.empty());
  saw = Announced(*peer, "long", 3 * kKvPage, {1, 2});
  ExpectTargetRefusal(saw, "a delivery of 49152 bytes is not its 2 pages");
}

TEST_F(ExposedTargetPages, AChunkSizeThatDoesNotDivideThePageIsRefused) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "straddling", 2 * kKvPage, {1, 2}, 2 * kKvPage);
  ExpectTargetRefusal(saw, "chunk size 32768 does not divide target kv's 16384-byte pages");
  EXPECT_TRUE(saw.grants.empty());
}

TEST_F(ExposedTargetPages, APageInFlightInAnotherDeliveryIsRefusedOnAnyPageAndOtherPagesAreNot) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  PeerSaw saw = Announced(*peer, "first", 3 * kKvPage, {20, 5, 6});
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  saw = Announced(*peer, "second", 2 * kKvPage, {30, 6});
  ExpectTargetRefusal(saw, "page 6 (bytes [98304, 114688)) of target kv overlap delivery first");
  EXPECT_TRUE(saw.grants.empty());
  // A delivery at an offset meets the pages too.
  protocol::Announce at_offset = peer->AnnounceOf("at-offset", kKvPage, kKvPage);
  at_offset.target = "kv";
  at_offset.target_offset = 20 * kKvPage + 100;
  ASSERT_TRUE(peer->Send(at_offset).ok());
  saw = peer->Watch("at-offset", kExposedWatch);
  ExpectTargetRefusal(saw, "overlap delivery first, in flight into [327680, 344064)");
  saw = Announced(*peer, "elsewhere", 2 * kKvPage, {7, 4});
  EXPECT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
}

TEST_F(ExposedTargetPages, AMismatchedPageListIsToldUnusableWithItsPages) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const auto claimed = PatternBytes(13, kKvPage);
  protocol::Announce a = PagesAnnounce(*peer, "forged", kKvPage, {33});
  a.digest = DigestOf(claimed);
  ASSERT_TRUE(peer->Send(a).ok());
  PeerSaw saw = peer->Watch("forged", kExposedWatch);
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  const std::vector<uint8_t> other(kKvPage, 0x5a);
  ASSERT_TRUE(peer->WriteWindow(saw.grants[0], kKvPage, other).ok());
  ASSERT_TRUE(peer->Send(protocol::Commit{"forged", a.digest, {}}).ok());
  saw = peer->Watch("forged", kExposedWatch);
  EXPECT_EQ(ExposedReason(saw), "validation");
  ASSERT_EQ(heard_.AwaitCount(1), 1u);
  EXPECT_FALSE(heard_.at(0).ok);
  EXPECT_EQ(heard_.at(0).pages, std::vector<uint64_t>{33});
}

// A window is registered over its listed pages only: a sender that writes on past the end
// of page 9 (into page 10, which it did not list) meets no key, and page 10 keeps its bytes.
TEST_F(ExposedTargetPages, AWriteBeyondAListedPageMeetsNoKey) {
  std::fill(buffer_.begin() + 10 * kKvPage, buffer_.begin() + 11 * kKvPage, 0xa5);
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "overrun", 2 * kKvPage, {9, 3});
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  ASSERT_EQ(saw.grants[0].length, kKvPage) << "the first window is page 9 alone";
  protocol::Grant stretched = saw.grants[0];
  stretched.chunk_count = 2;
  stretched.length = 2 * kKvPage;
  const uint64_t refused_before = rig_.fabric().counts().access_errors;
  const auto bytes = PatternBytes(16, 2 * kKvPage);
  EXPECT_FALSE(peer->WriteWindow(stretched, kKvPage, bytes).ok());
  EXPECT_EQ(rig_.fabric().counts().access_errors, refused_before + 1);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.begin() + kKvPage, PageOf(buffer_, 9).begin()));
  const auto page10 = PageOf(buffer_, 10);
  EXPECT_TRUE(std::all_of(page10.begin(), page10.end(), [](uint8_t b) { return b == 0xa5; }))
      << "a write landed in a page the list did not name";
}

TEST_F(ExposedTargetPages, RevokeEndsAPageListInFlightAndNoWriteLandsInItsPages) {
  ExposePaged();
  auto peer = Peer();
  ASSERT_NE(peer, nullptr);
  const PeerSaw saw = Announced(*peer, "in-flight", 2 * kKvPage, {12, 5});
  ASSERT_EQ(saw.grants.size(), 1u) << ExposedReason(saw);
  ASSERT_TRUE(rig_.receiver().Revoke("kv").ok());
  ASSERT_EQ(heard_.count(), 1u) << "told before Revoke returned";
  EXPECT_FALSE(heard_.at(0).ok);
  EXPECT_EQ(heard_.at(0).pages, (std::vector<uint64_t>{12, 5}));
  const uint64_t refused_before = rig_.fabric().counts().access_errors;
  EXPECT_FALSE(peer->WriteWindow(saw.grants[0], kKvPage, PatternBytes(17, 2 * kKvPage)).ok());
  EXPECT_EQ(rig_.fabric().counts().access_errors, refused_before + 1);
  EXPECT_TRUE(AllZero(buffer_)) << "a write landed after Revoke returned";
}

TEST_F(ExposedTargetPages, TheSenderRefusesAPageListWithAnOffsetOrWithoutATarget) {
  ExposePaged();
  auto link = rig_.OpenLink();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const auto bytes = PatternBytes(14, kKvPage);
  DeliveryOptions both = IntoPages("both", {1});
  both.target_offset = kKvPage;
  DeliveryOutcome out = rig_.Deliver(**link, bytes, both);
  EXPECT_EQ(out.status.code(), ErrorCode::kInvalidArgument) << out.status.ToString();
  DeliveryOptions untargeted = IntoPages("untargeted", {1});
  untargeted.target.clear();
  out = rig_.Deliver(**link, bytes, untargeted);
  EXPECT_EQ(out.status.code(), ErrorCode::kInvalidArgument) << out.status.ToString();
  EXPECT_EQ(rig_.fabric().counts().bytes_placed, 0u);
}

TEST(AddressedAnnounce, ThePageListRoundTripsAndIsMalformedWithAnOffsetOrWithoutATarget) {
  protocol::Announce a;
  a.delivery_id = "x";
  a.bytes = 12;
  a.chunk_size = 4;
  a.target = "kv";
  a.target_pages = {7, 0, 3};
  auto decoded = protocol::DecodeFrame(protocol::Encode(a), protocol::Limits{});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<protocol::Announce>(*decoded), a);

  protocol::Announce offset = a;
  offset.target_offset = 4096;
  auto refused = protocol::DecodeFrame(protocol::Encode(offset), protocol::Limits{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("target_offset"), std::string::npos);

  // docs/protocol.md's example: the target block of {target "kv" at pages [9, 3]}.
  protocol::Announce documented = a;
  documented.bytes = 2;
  documented.chunk_size = 1;
  documented.target_pages = {9, 3};
  const std::vector<uint8_t> frame = protocol::Encode(documented);
  const std::vector<uint8_t> tail = {0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 'k', 'v', 0, 0, 0,
                                     0,    0,    0,    0,    0, 2, 0, 0, 0,   9,   0, 0, 0,
                                     0,    0,    0,    0,    3, 0, 0, 0, 0,   0,   0, 0};
  ASSERT_GE(frame.size(), tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), frame.end() - tail.size()));

  protocol::Limits few;
  few.max_target_pages = 2;
  refused = protocol::DecodeFrame(protocol::Encode(a), few);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("3 pages, limit 2"), std::string::npos)
      << refused.status().message();
}

// A receipt names the pages as runs; a long scattered list is cut, and says how many it left.
TEST(TargetPageRuns, NamesRunsInListOrderAndCountsWhatItCuts) {
  const std::vector<uint64_t> pages = {9, 3, 4, 5, 40, 41, 7};
  EXPECT_EQ(receiver::PageRuns(pages), "9, 3-5, 40-41, 7");
  std::vector<uint64_t> scattered;
  for (uint64_t p = 0; p < 4096; ++p) scattered.push_back(2 * p);
  const std::string text = receiver::PageRuns(scattered);
  EXPECT_LT(text.size(), 600u);
  EXPECT_EQ(text.rfind("0, 2, 4, ", 0), 0u) << text;
  EXPECT_NE(text.find("... (4096 pages in 4096 runs"), std::string::npos) << text;
}

}  // namespace
}  // namespace writ::inprocess
