// Proves that a length read from the wire never sizes an allocation: this
// binary replaces operator new to record the largest request made while a
// test is watching (on the watching thread only).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "protocol/frame.h"
#include "receipt/canonical_json.h"
#include "receipt/identity.h"
#include "receipt/signing.h"
#include "sample_messages.h"
#include "sample_receipt.h"
#include "test_util.h"
#include "vocabulary/digest.h"

namespace {
thread_local bool t_watching = false;
thread_local size_t t_largest = 0;
thread_local size_t t_count = 0;  // allocations made while watching
}  // namespace

// The replacements pair malloc with free; GCC cannot see that and warns.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t n) {
  if (t_watching) {
    t_largest = std::max(t_largest, n);
    ++t_count;
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// Libraries built without this binary's view (simdjson's parser) allocate with the
// nothrow form: replaced too, so that every block is counted and freed as it was taken
// (under ASan, the runtime's own nothrow form paired with the free below is a mismatch).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (t_watching) {
    t_largest = std::max(t_largest, n);
    ++t_count;
  }
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace writ::protocol {
namespace {

using namespace std::chrono_literals;

class Watch {
 public:
  Watch() {
    t_largest = 0;
    t_count = 0;
    t_watching = true;
  }
  ~Watch() { t_watching = false; }
  size_t largest() const { return t_largest; }
  size_t count() const { return t_count; }
};

TEST(Allocation, CounterSeesARealFrame) {
  Receipt r{"id", "{\"p\":\"" + std::string(512 * 1024, 'x') + "\"}"};
  const auto frame = Encode(r);
  FrameReader reader;
  Watch watch;
  ASSERT_TRUE(reader.Feed(frame).ok());
  auto next = reader.Next();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_GE(watch.largest(), 512u * 1024u);
}

TEST(Allocation, OversizeLengthAllocatesNothingLarge) {
  for (uint32_t declared : {0xffffffffu, 0x80000000u, (1u << 20) + 1}) {
    const auto frame = testing::RawFrame(2, {}, kProtocolVersion, 0, declared);
    FrameReader reader;
    Watch watch;
    EXPECT_FALSE(reader.Feed(frame).ok());
    EXPECT_FALSE(reader.Next().ok());
    EXPECT_LT(watch.largest(), 4096u) << "declared " << declared;
  }
}

// A string length field claiming gigabytes inside a small, well-framed payload.
TEST(Allocation, HugeFieldLengthAllocatesNothingLarge) {
  std::vector<uint8_t> payload(8, 0);
  StoreLe32(payload.data(), 0xfffffff0u);
  const auto frame = testing::RawFrame(5, payload);
  Watch watch;
  EXPECT_FALSE(DecodeFrame(frame, Limits{}).ok());
  EXPECT_LT(watch.largest(), 4096u);
}

TEST(Allocation, HostilePeerOverTheChannel) {
  auto listener = ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  std::thread peer([port = listener->port()] {
    auto ch = ControlChannel::Connect("127.0.0.1", port, 5s);
    ASSERT_TRUE(ch.ok());
    const auto header = testing::RawFrame(5, {}, kProtocolVersion, 0, 0xffffffffu);
    ASSERT_EQ(::send(ch->fd(), header.data(), header.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(header.size()));
    // Keep the connection open and send payload bytes the receiver must not wait for.
    std::vector<uint8_t> junk(4096, 0xab);
    ::send(ch->fd(), junk.data(), junk.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(300ms);
  });
  auto server = listener->Accept(5s);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Result<Message> got = Status::Internal("not received");
  size_t largest = 0;
  {
    Watch watch;
    got = server->Receive(5s);
    largest = watch.largest();
  }
  peer.join();
  EXPECT_ERROR(got, ErrorCode::kMalformed, "frame.length: receipt payload of 4294967295 bytes");
  EXPECT_LT(largest, 64u * 1024u);
}

// The steady state of a connection: receipts written into a buffer that is reused, frames
// queued and written in one send, frames read into the reader's buffer. After a first
// round that sizes the buffers, none of it allocates (a decoded message's own strings
// are the caller's: they are counted apart).
// Both ends of a control connection over loopback TCP.
std::pair<Result<ControlChannel>, Result<ControlChannel>> ConnectedPair() {
  auto listener = ControlListener::Listen("127.0.0.1", 0);
  if (!listener.ok()) return {listener.status(), listener.status()};
  auto client = ControlChannel::Connect("127.0.0.1", listener->port(), 5s);
  auto server = listener->Accept(5s);
  return {std::move(client), std::move(server)};
}

TEST(SteadyState, ReceiptTextIsWrittenWithoutAllocating) {
  writ::Receipt receipt = writ::SampleReceipt(writ::ReceiptRung::kValidated, "steady-1");
  receipt.signature = writ::ReceiptSignature{};
  receipt.signature->key_id = std::string(16, 'a');
  receipt.signature->public_key = std::string(64, 'b');
  receipt.signature->value = std::string(128, 'c');
  std::string text;
  writ::receipt::AppendReceiptJson(text, receipt);  // sizes `text`
  const std::string first = text;
  Watch watch;
  for (int i = 0; i < 1000; ++i) {
    text.clear();
    writ::receipt::AppendReceiptJson(text, receipt);
  }
  EXPECT_EQ(watch.count(), 0u);
  EXPECT_EQ(text, first);
}

// The sender reads every receipt it is sent this way (its outcome keeps the text): once the
// thread's parser has its buffers, a receipt is checked and its facts read without allocating.
TEST(SteadyState, AReceiptIsReadStrictlyWithoutAllocating) {
  writ::Receipt receipt = writ::SampleReceipt(writ::ReceiptRung::kValidated, "steady-facts");
  receipt.signature = writ::ReceiptSignature{};
  receipt.signature->algorithm = "ed25519-merkle-sha256";
  receipt.signature->key_id = std::string(16, 'a');
  receipt.signature->public_key = std::string(64, 'b');
  receipt.signature->value = std::string(128, 'c');
  receipt.signature->root = std::string(64, 'd');
  receipt.signature->leaves = 64;
  for (int i = 0; i < 6; ++i) receipt.signature->path.push_back({"left", std::string(64, 'e')});
  const std::string text = writ::ReceiptToJson(receipt);
  ASSERT_TRUE(writ::ReadReceiptFacts(text).ok());  // sizes the thread's parser
  Watch watch;
  for (int i = 0; i < 1000; ++i) {
    auto facts = writ::ReadReceiptFacts(text);
    if (!facts.ok() || facts->delivery_id != "steady-facts") FAIL() << facts.status().ToString();
  }
  EXPECT_EQ(watch.count(), 0u);
  // The full reading, for contrast, copies every field into the Receipt's strings.
  {
    Watch full;
    ASSERT_TRUE(writ::ReceiptFromJson(text).ok());
    EXPECT_GT(full.count(), 10u);
  }
}

// A receiver signs its receipts as one group a pass: each signed text is the receipt's own
// unsigned text with the signature spliced in, in room reserved for it. What signing
// allocates grows with the tree's levels (a vector each), not with the receipts.
size_t AllocationsToSign(size_t receipts, const writ::receipt::Identity& identity) {
  std::vector<writ::receipt::UnsignedReceipt> texts;
  for (size_t i = 0; i < receipts; ++i) {
    texts.push_back(writ::receipt::Unsigned(
        writ::SampleReceipt(writ::ReceiptRung::kValidated, "group-" + std::to_string(i))));
  }
  Watch watch;
  auto json = writ::receipt::SignUnsignedJsonOnly(texts, identity);
  const size_t count = watch.count();
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  if (json.ok()) {
    EXPECT_EQ(json->size(), receipts);
  }
  return count;
}

TEST(SteadyState, SigningAGroupAllocatesNothingPerReceipt) {
  auto identity = writ::receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  AllocationsToSign(2, *identity);  // this thread's member buffer
  const size_t sixteen = AllocationsToSign(16, *identity);
  const size_t sixty_four = AllocationsToSign(64, *identity);
  // Two more levels of the tree; a string per receipt would be 48 more.
  EXPECT_LE(sixty_four, sixteen + 2) << sixteen << " for 16 receipts, " << sixty_four << " for 64";
}

// Each side of a small delivery makes and drops an xxh3-128 digester: after the first, one
// is made from what the last left behind (libxxhash's state too, which this counter,
// replacing operator new only, would not see), and it digests from a fresh start.
TEST(SteadyState, AnXxh3DigesterMadeAgainAllocatesNothing) {
  const std::vector<uint8_t> bytes(4096, 0x5a);
  auto first = writ::vocabulary::DigestOf(writ::Rule::kXxh3_128, bytes);
  ASSERT_TRUE(first.ok());
  Watch watch;
  for (int i = 0; i < 1000; ++i) {
    auto digester = writ::vocabulary::Digester::Create(writ::Rule::kXxh3_128);
    if (!digester.ok()) FAIL() << digester.status().ToString();
    (*digester)->Update(bytes);
  }
  EXPECT_EQ(watch.count(), 0u);
  auto again = writ::vocabulary::Digester::Create(writ::Rule::kXxh3_128);
  ASSERT_TRUE(again.ok());
  (*again)->Update(bytes);
  EXPECT_EQ((*again)->Finish(), *first);
}

TEST(SteadyState, CorkedFramesAreSentWithoutAllocating) {
  auto [sender, receiver] = ConnectedPair();
  ASSERT_TRUE(sender.ok() && receiver.ok());
  Receipts batch;
  for (int i = 0; i < 8; ++i) {
    batch.receipts.push_back(Receipt{"steady-" + std::to_string(i), "{\"p\":1}"});
  }
  const Message message = batch;
  const Message freed = SlotsFree{7, {1, 2, 3}};
  size_t steady_allocations = 0;
  size_t decoded = 0;
  for (int round = 0; round < 50; ++round) {
    size_t before = 0;
    {
      Watch watch;
      sender->Cork();
      ASSERT_TRUE(sender->Send(freed).ok());
      ASSERT_TRUE(sender->Send(message).ok());
      ASSERT_TRUE(sender->Uncork().ok());
      before = watch.count();
    }
    if (round > 0) steady_allocations += before;
    for (int m = 0; m < 2; ++m) {
      auto got = receiver->Receive(5s);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ++decoded;
    }
  }
  EXPECT_EQ(steady_allocations, 0u);
  EXPECT_EQ(decoded, 100u);
}

// Both frames of a pass arrive in one read; the second is returned without another one.
TEST(SteadyState, OneReadYieldsEveryCompleteFrame) {
  auto [sender, receiver] = ConnectedPair();
  ASSERT_TRUE(sender.ok() && receiver.ok());
  sender->Cork();
  for (uint32_t i = 1; i <= 5; ++i) ASSERT_TRUE(sender->Send(SlotsFree{i, {i}}).ok());
  ASSERT_TRUE(sender->Uncork().ok());
  auto first = receiver->Receive(5s);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // The peer's end is closed now: had the channel not kept the other four frames from its
  // one read, the next call would read the close instead of a message.
  sender->Shutdown();
  for (uint32_t i = 2; i <= 5; ++i) {
    auto next = receiver->Receive(0ms);
    ASSERT_TRUE(next.ok()) << i << ": " << next.status().ToString();
    EXPECT_EQ(std::get<SlotsFree>(*next).window_id, i);
  }
}

}  // namespace
}  // namespace writ::protocol
