// A hostile sender and its standing window (docs/security.md, "Standing windows (rings)"): it
// writes a ring slot, sends its `deliver`, then writes the slot again with other bytes. The
// receiver copies a slot out before digesting it, so what it validates and retains is what
// the slot held when both the deliver and its write were in, whatever is written after.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "fabric/work_completion.h"
#include "protocol/codec.h"
#include "requirement.h"
#include "sender/link.h"
#include "vocabulary/digest.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> DigestOf(std::span<const uint8_t> bytes) {
  auto digester = vocabulary::Digester::Create(Rule::kSha256);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return (*digester)->Finish();
}

class RingRewrite : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " is not available here");
    std::filesystem::create_directories(dir_.File("out"));
    serve_ = Serve::Start(GetParam(), {"--out", dir_.File("out")});
    ASSERT_TRUE(serve_);
    SessionOptions options;
    options.to = serve_->address();
    options.provider = GetParam();
    options.depth = 1;
    auto link = sender::Link::Open(options);
    ASSERT_TRUE(link.ok()) << link.status().ToString();
    link_ = std::move(link).value();
  }

  // Reads until a refusal of `id` or a receipt of `rung` for it (perhaps read already:
  // rungs reached together come in one message).
  std::string Await(const std::string& id, const std::string& rung) {
    for (;;) {
      if (seen_.count(id + "/" + rung) > 0) return rung;
      auto m = link_->channel().Receive(10s);
      if (!m.ok()) return "no answer: " + m.status().message();
      if (const auto* r = std::get_if<protocol::Ring>(&*m)) ring_ = *r;
      if (const auto* r = std::get_if<protocol::Refuse>(&*m); r && r->delivery_id == id) {
        return "refused: " + r->detail;
      }
      for (const protocol::Receipt* r : protocol::ReceiptsOf(*m)) {
        auto parsed = ReceiptFromJson(r->json);
        if (parsed.ok())
          seen_.insert(r->delivery_id + "/" + std::string(ReceiptRungName(parsed->rung)));
      }
    }
  }

  // Writes `bytes` into ring slot `slot`, with its notification or without one.
  Status WriteSlot(uint32_t slot, const std::vector<uint8_t>& bytes, bool notify) {
    std::memcpy(link_->ring().slot(slot), bytes.data(), bytes.size());
    fabric::WriteRequest write;
    write.request_id = link_->NextRequestId();
    write.peer = link_->peer();
    write.local = &link_->ring().region();
    write.local_offset = uint64_t{slot} * ring_->slot_size;
    write.length = bytes.size();
    write.remote = fabric::RegionDescriptor{ring_->remote_address, ring_->key,
                                            uint64_t{ring_->slot_count} * ring_->slot_size};
    write.remote_offset = uint64_t{slot} * ring_->slot_size;
    if (notify) write.remote_data = (ring_->window_id << 16) | slot;
    WRIT_RETURN_IF_ERROR(link_->node().PostWrite(write).status());
    std::vector<fabric::WorkCompletion> records;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (records.empty() && std::chrono::steady_clock::now() < deadline) {
      WRIT_RETURN_IF_ERROR(link_->node().Poll(records).status());
    }
    if (records.empty()) return Status::Timeout("no completion for the slot's write");
    return records.front().ok() ? Status::Ok() : Status::Transport("the slot's write failed");
  }

  TempDir dir_;
  std::unique_ptr<Serve> serve_;
  std::unique_ptr<sender::Link> link_;
  std::optional<protocol::Ring> ring_;
  std::set<std::string> seen_;  // "ID/RUNG" of every receipt read
};

TEST_P(RingRewrite, ASlotRewrittenAfterItsDeliverChangesNeitherTheStoredBytesNorTheVerdict) {
  // An empty delivery first: its admission grants the ring.
  protocol::Announce warm;
  warm.delivery_id = "warm";
  warm.bytes = 0;
  warm.chunk_size = 1;
  warm.rule = Rule::kSha256;
  warm.digest = DigestOf({});
  warm.sender_fabric_address = link_->local_address();
  ASSERT_TRUE(link_->channel().Send(warm).ok());
  ASSERT_TRUE(link_->channel().Send(protocol::Commit{"warm", warm.digest, {}}).ok());
  ASSERT_EQ(Await("warm", "retained"), "retained");
  ASSERT_TRUE(ring_) << "no ring after an admitted delivery";
  ASSERT_TRUE(link_->AdoptRing(*ring_).ok());

  const std::vector<uint8_t> first(4096, 0xA1), second(4096, 0xB2);
  ASSERT_TRUE(WriteSlot(0, first, /*notify=*/true).ok());
  protocol::Deliver deliver;
  deliver.slot = 0;
  deliver.announce.digest = DigestOf(first);
  deliver.announce.delivery_id = "rewritten";
  deliver.announce.bytes = first.size();
  deliver.announce.chunk_size = first.size();
  deliver.announce.rule = Rule::kSha256;
  deliver.announce.sender_fabric_address = link_->local_address();
  ASSERT_TRUE(link_->channel().Send(deliver).ok());
  ASSERT_EQ(Await("rewritten", "received"), "received") << "the slot is copied out by now";
  // Other bytes into the same slot, without and then with a notification.
  ASSERT_TRUE(WriteSlot(0, second, /*notify=*/false).ok());
  ASSERT_TRUE(WriteSlot(0, second, /*notify=*/true).ok());
  ASSERT_EQ(Await("rewritten", "retained"), "retained");

  std::ifstream in(dir_.File("out") + "/rewritten", std::ios::binary);
  const std::vector<uint8_t> stored((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(stored, first) << "the retained bytes are the slot's when deliver and write were in";
}

// tcp and rxm check keys and report no length for a remote write; shm moves a write and
// its notification together.
INSTANTIATE_TEST_SUITE_P(Providers, RingRewrite, ::testing::Values("tcp", "tcp;ofi_rxm", "shm"),
                         [](const auto& info) {
                           return info.param == "tcp"   ? std::string("tcp")
                                  : info.param == "shm" ? std::string("shm")
                                                        : std::string("rxm");
                         });

}  // namespace
}  // namespace writ::testing
