// Issue #31, "A notification is routed by its tag alone": an admitted sender posts zero-byte
// writes into its own window whose immediate data names another connection's tag. Such a
// notification must count for nothing: it must not refuse the victim's delivery (chunk index
// 0xffff), receipt it (every chunk) or copy out its ring slot before its write lands. Each test
// runs a real `writ serve`, a victim and an attacker built on writ's own fabric and control
// layers; the attacker is handed the victim's real tag, the strongest form of the attack.
// On rxm, which names no writer of a remote write, a chunk needs its sender's `written` too
// (sent over the sender's own control connection once its write completed), and the victim
// behaves as writ's sender does there; the attacker also sends `written` naming the
// victim's delivery and window from its own connection.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
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

constexpr uint64_t kForgeChunk = 4096;

std::vector<uint8_t> ForgeDigestOf(std::span<const uint8_t> bytes) {
  auto digester = vocabulary::Digester::Create(Rule::kSha256);
  EXPECT_TRUE(digester.ok());
  (*digester)->Update(bytes);
  return (*digester)->Finish();
}

// One connection to the serve, driven a message and a write at a time.
class ForgeClient {
 public:
  static std::unique_ptr<ForgeClient> Connect(const std::string& to, const std::string& provider) {
    SessionOptions options;
    options.to = to;
    options.provider = provider;
    options.depth = 1;
    auto link = sender::Link::Open(options);
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    if (!link.ok()) return nullptr;
    auto client = std::make_unique<ForgeClient>();
    client->link_ = std::move(link).value();
    if (!client->link_->EnsureStaging(kForgeChunk).ok()) return nullptr;
    return client;
  }

  Status Announce(const std::string& id, const std::vector<uint8_t>& bytes) {
    protocol::Announce a;
    a.delivery_id = id;
    a.bytes = bytes.size();
    a.chunk_size = kForgeChunk;
    a.rule = Rule::kSha256;
    a.digest = ForgeDigestOf(bytes);
    a.sender_fabric_address = link_->local_address();
    return link_->channel().Send(a);
  }

  Status Commit(const std::string& id, const std::vector<uint8_t>& bytes) {
    return link_->channel().Send(protocol::Commit{id, ForgeDigestOf(bytes), {}});
  }

  // The first grant for `id`, or nothing within 10 s.
  std::optional<protocol::Grant> AwaitGrant(const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      for (auto it = grants_.begin(); it != grants_.end(); ++it) {
        if (it->delivery_id != id) continue;
        protocol::Grant g = *it;
        grants_.erase(it);
        return g;
      }
      if (!Pump(100ms)) break;
    }
    return std::nullopt;
  }

  // "RUNG" once a receipt of `rung` for `id` came, else why not.
  std::string Await(const std::string& id, const std::string& rung) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (refused_.count(id) > 0) return "refused: " + refused_[id];
      if (seen_.count(id + "/" + rung) > 0) return rung;
      if (!Pump(100ms)) return "the receiver closed the connection";
    }
    return "no " + rung + " receipt within 10 s";
  }

  // What the receiver said about `id` within `quiet` (a receipt or a refusal), or "".
  std::string SaidWithin(const std::string& id, std::chrono::milliseconds quiet) {
    const auto deadline = std::chrono::steady_clock::now() + quiet;
    while (std::chrono::steady_clock::now() < deadline && Pump(20ms)) {
    }
    if (refused_.count(id) > 0) return "refused: " + refused_[id];
    for (const std::string& seen : seen_) {
      if (seen.rfind(id + "/", 0) == 0) return "receipt " + seen;
    }
    return "";
  }

  // A write into `window` at chunk `chunk` of `bytes` (zero: the notification alone)
  // carrying `data` as its immediate.
  Status Write(const fabric::RegionDescriptor& window, uint64_t offset,
               const std::vector<uint8_t>& bytes, uint32_t data, const fabric::MemoryRegion* local,
               uint64_t local_offset) {
    fabric::WriteRequest write;
    write.request_id = link_->NextRequestId();
    write.peer = link_->peer();
    write.local = local;
    write.local_offset = local_offset;
    write.length = bytes.size();
    write.remote = window;
    write.remote_offset = offset;
    write.remote_data = data;
    WRIT_RETURN_IF_ERROR(link_->node().PostWrite(write).status());
    std::vector<fabric::WorkCompletion> records;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (records.empty() && std::chrono::steady_clock::now() < deadline) {
      WRIT_RETURN_IF_ERROR(link_->node().Poll(records).status());
    }
    if (records.empty()) return Status::Timeout("no completion for a write");
    return records.front().ok() ? Status::Ok() : Status::Transport("the write failed");
  }

  // Chunk `chunk` of a granted window: `bytes`, with the grant's own notification.
  // Where the provider names no writer, the completed write is then attested.
  Status WriteChunk(const protocol::Grant& g, uint32_t chunk, const std::vector<uint8_t>& bytes) {
    std::memcpy(link_->staging_slot(0), bytes.data(), bytes.size());
    WRIT_RETURN_IF_ERROR(Write(Window(g), uint64_t{chunk} * kForgeChunk, bytes,
                               (g.window_id << 16) | chunk, &link_->staging_region(),
                               link_->staging_offset(0)));
    if (!attests()) return Status::Ok();
    return Attest(g.delivery_id, g.window_id, chunk);
  }

  Status Attest(const std::string& id, uint32_t window, uint32_t chunk) {
    return link_->channel().Send(protocol::Written{id, window, {chunk}});
  }
  bool attests() const { return link_->node().provider().writes_need_attestation(); }

  // A one-byte write into this client's own window `own` naming `tag` and `chunk` (shm
  // completes no zero-byte write; tcp and rxm report no length either way).
  Status Forge(const protocol::Grant& own, uint32_t tag, uint32_t chunk) {
    return Write(Window(own), 0, {0x66}, (tag << 16) | chunk, &link_->staging_region(), 0);
  }

  // Ring slot `slot`: `bytes`, with the slot's notification.
  Status WriteSlot(uint32_t slot, const std::vector<uint8_t>& bytes) {
    std::memcpy(link_->ring().slot(slot), bytes.data(), bytes.size());
    const fabric::RegionDescriptor ring{ring_->remote_address, ring_->key,
                                        uint64_t{ring_->slot_count} * ring_->slot_size};
    return Write(ring, uint64_t{slot} * ring_->slot_size, bytes, (ring_->window_id << 16) | slot,
                 &link_->ring().region(), uint64_t{slot} * ring_->slot_size);
  }

  // An empty delivery, whose admission grants the connection its ring.
  bool TakeRing() {
    if (!Announce("warm", {}).ok()) return false;
    if (!link_->channel().Send(protocol::Commit{"warm", ForgeDigestOf({}), {}}).ok()) return false;
    if (Await("warm", "retained") != "retained" || !ring_) return false;
    return link_->AdoptRing(*ring_).ok();
  }

  Status DeliverIntoSlot(uint32_t slot, const std::string& id, const std::vector<uint8_t>& bytes) {
    protocol::Deliver deliver;
    deliver.slot = slot;
    deliver.announce.digest = ForgeDigestOf(bytes);
    deliver.announce.delivery_id = id;
    deliver.announce.bytes = bytes.size();
    deliver.announce.chunk_size = bytes.size();
    deliver.announce.rule = Rule::kSha256;
    deliver.announce.sender_fabric_address = link_->local_address();
    return link_->channel().Send(deliver);
  }

  const std::optional<protocol::Ring>& ring() const { return ring_; }

 private:
  static fabric::RegionDescriptor Window(const protocol::Grant& g) {
    return fabric::RegionDescriptor{g.remote_address, g.key, g.length};
  }

  // Reads one message, if one comes within `wait`, and files it; false once the connection
  // is gone.
  bool Pump(std::chrono::milliseconds wait) {
    auto m = link_->channel().Receive(wait);
    if (!m.ok()) return m.status().code() == ErrorCode::kTimeout;
    if (const auto* g = std::get_if<protocol::Grant>(&*m)) grants_.push_back(*g);
    if (const auto* r = std::get_if<protocol::Ring>(&*m)) ring_ = *r;
    if (const auto* r = std::get_if<protocol::Refuse>(&*m)) refused_[r->delivery_id] = r->detail;
    for (const protocol::Receipt* r : protocol::ReceiptsOf(*m)) {
      auto parsed = ReceiptFromJson(r->json);
      if (parsed.ok()) {
        seen_.insert(r->delivery_id + "/" + std::string(ReceiptRungName(parsed->rung)));
      }
    }
    return true;
  }

  std::unique_ptr<sender::Link> link_;
  std::deque<protocol::Grant> grants_;
  std::optional<protocol::Ring> ring_;
  std::set<std::string> seen_;  // "ID/RUNG" of every receipt read
  std::map<std::string, std::string> refused_;
};

class ForgedNotification : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " is not available here");
    serve_ = Serve::Start(GetParam());
    ASSERT_TRUE(serve_);
    attacker_ = ForgeClient::Connect(serve_->address(), GetParam());
    ASSERT_TRUE(attacker_);
    // The attacker's own window, which its forged writes land in.
    ASSERT_TRUE(attacker_->Announce("bait", std::vector<uint8_t>(kForgeChunk, 0x33)).ok());
    auto own = attacker_->AwaitGrant("bait");
    ASSERT_TRUE(own) << "the attacker was granted no window";
    own_ = *own;
    // Connected last: a connection says what it wants within the handshake timeout.
    victim_ = ForgeClient::Connect(serve_->address(), GetParam());
    ASSERT_TRUE(victim_);
  }

  // The victim's 4 KiB delivery `id`, its window granted and not yet written.
  protocol::Grant VictimWaits(const std::string& id) {
    EXPECT_TRUE(victim_->Announce(id, bytes_).ok());
    auto granted = victim_->AwaitGrant(id);
    EXPECT_TRUE(granted) << "the victim was granted no window";
    return granted.value_or(protocol::Grant{});
  }

  // The victim writes its chunk, commits, and must get its delivery retained.
  void VictimCompletes(const std::string& id, const protocol::Grant& g) {
    ASSERT_TRUE(victim_->WriteChunk(g, 0, bytes_).ok());
    ASSERT_TRUE(victim_->Commit(id, bytes_).ok());
    ASSERT_EQ(victim_->Await(id, "retained"), "retained");
  }

  std::unique_ptr<Serve> serve_;
  std::unique_ptr<ForgeClient> victim_;
  std::unique_ptr<ForgeClient> attacker_;
  protocol::Grant own_;
  const std::vector<uint8_t> bytes_ = std::vector<uint8_t>(kForgeChunk, 0x5a);
};

// Before the fix: the victim's delivery was refused `malformed` at once.
TEST_P(ForgedNotification, AnOutOfRangeChunkIndexDoesNotRefuseAnotherConnectionsDelivery) {
  const protocol::Grant g = VictimWaits("victim");
  const Status forged = attacker_->Forge(own_, g.window_id, 0xffff);
  ASSERT_TRUE(forged.ok()) << forged.ToString();
  if (attacker_->attests()) {
    ASSERT_TRUE(attacker_->Attest("victim", g.window_id, 0xffff).ok());
  }
  EXPECT_EQ(victim_->SaidWithin("victim", 500ms), "") << "a forged notification ended it";
  VictimCompletes("victim", g);
}

// Before the fix: the victim's window was consumed before its write, and the delivery was
// receipted `received` (and refused) for bytes it never wrote.
TEST_P(ForgedNotification, ForgingEveryChunkNeitherReceiptsNorConsumesTheVictimsWindow) {
  const protocol::Grant g = VictimWaits("victim");
  for (uint32_t c = 0; c < g.chunk_count; ++c) {
    ASSERT_TRUE(attacker_->Forge(own_, g.window_id, c).ok());
    if (attacker_->attests()) {
      ASSERT_TRUE(attacker_->Attest("victim", g.window_id, c).ok());
    }
  }
  EXPECT_EQ(victim_->SaidWithin("victim", 500ms), "") << "forged notifications counted";
  VictimCompletes("victim", g);
}

// Before the fix: the victim's slot was copied out before its write landed, and the delivery
// refused for a digest mismatch. On rxm the `deliver` follows the slot's completed write (as
// writ's sender sends it there), so the forgery comes first and must not spoil the slot.
TEST_P(ForgedNotification, AForgedRingSlotNotificationDoesNotCopyOutTheVictimsSlot) {
  ASSERT_TRUE(victim_->TakeRing()) << "the victim got no ring";
  if (victim_->attests()) {
    ASSERT_TRUE(attacker_->Forge(own_, victim_->ring()->window_id, 0).ok());
    EXPECT_EQ(victim_->SaidWithin("small", 500ms), "");
    ASSERT_TRUE(victim_->WriteSlot(0, bytes_).ok());
    ASSERT_TRUE(victim_->DeliverIntoSlot(0, "small", bytes_).ok());
    EXPECT_EQ(victim_->Await("small", "retained"), "retained");
    return;
  }
  ASSERT_TRUE(victim_->DeliverIntoSlot(0, "small", bytes_).ok());
  ASSERT_TRUE(attacker_->Forge(own_, victim_->ring()->window_id, 0).ok());
  EXPECT_EQ(victim_->SaidWithin("small", 500ms), "") << "the slot was taken before its write";
  ASSERT_TRUE(victim_->WriteSlot(0, bytes_).ok());
  EXPECT_EQ(victim_->Await("small", "retained"), "retained");
}

INSTANTIATE_TEST_SUITE_P(Providers, ForgedNotification,
                         ::testing::Values("tcp", "tcp;ofi_rxm", "shm"), [](const auto& info) {
                           return info.param == "tcp"   ? std::string("tcp")
                                  : info.param == "shm" ? std::string("shm")
                                                        : std::string("rxm");
                         });

}  // namespace
}  // namespace writ::testing
