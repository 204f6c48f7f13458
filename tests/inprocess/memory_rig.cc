#include "memory_rig.h"

#include <cstring>

#include "common/pattern.h"
#include "receiver/receiver_start.h"
#include "sender/delivery_source.h"
#include "vocabulary/digest.h"

namespace writ::inprocess {

using namespace std::chrono_literals;

std::vector<uint8_t> PatternBytes(uint64_t stream, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  FillPattern(stream, 0, out.data(), out.size());
  return out;
}

std::vector<std::string> RungNames(const DeliveryOutcome& out) {
  std::vector<std::string> rungs;
  for (const Receipt& r : out.receipts) rungs.emplace_back(ReceiptRungName(r.rung));
  return rungs;
}

MemoryRig::MemoryRig() = default;

MemoryRig::~MemoryRig() {
  if (receiver_) (void)receiver_->Stop();
}

ReceiverOptions MemoryRig::BaseOptions() const {
  ReceiverOptions options;
  options.listen_host = "127.0.0.1";
  options.identity_dir = dir_.File("identity");
  options.window_pool_bytes = 4ull << 20;
  options.window_bytes = 1ull << 20;
  options.volatile_capacity_bytes = 64ull << 20;
  options.digest_threads = 1;
  options.ring_slots = 16;
  options.ring_slot_size = 16ull << 10;
  return options;
}

Status MemoryRig::Start(ReceiverOptions options, std::string store_faults) {
  options.provider = fabric::kMemoryProvider;
  WRIT_ASSIGN_OR_RETURN(receiver_, receiver::StartReceiver(std::move(options), fabric_.Opener(),
                                                           std::move(store_faults)));
  return Status::Ok();
}

Status MemoryRig::StartWrapped(ReceiverOptions options,
                               std::function<void(fabric::FaultInjectingFabric&)> made) {
  options.provider = fabric::kMemoryProvider;
  WRIT_ASSIGN_OR_RETURN(receiver_, receiver::StartReceiver(std::move(options),
                                                           fabric::FaultInjectingFabric::Wrapping(
                                                               fabric_.Opener(), std::move(made))));
  return Status::Ok();
}

Result<std::unique_ptr<sender::Link>> MemoryRig::OpenLink(
    SessionOptions options, std::function<void(fabric::FaultInjectingFabric&)> made) {
  options.to = receiver_->listen_address();
  if (made) {
    return sender::Link::Open(options,
                              fabric::FaultInjectingFabric::Wrapping(fabric_.Opener(), made));
  }
  return sender::Link::Open(options, fabric_.Opener());
}

DeliveryOutcome MemoryRig::Deliver(sender::Link& link, std::span<const uint8_t> bytes,
                                   const DeliveryOptions& options,
                                   std::optional<uint64_t> corrupt_chunk,
                                   const receipt::Identity* identity) {
  DeliveryOutcome out;
  out.status = sender::CheckDeliveryOptions(options);
  if (!out.status.ok()) return out;
  sender::PreparedDelivery prepared;
  out.status = sender::Prepare(sender::DeliverySource::FromBytes(bytes, options.id), options,
                               nullptr, out, prepared);
  if (!out.status.ok()) return out;
  prepared.corrupt_chunk = corrupt_chunk;
  sender::DeliveryRun run(link, identity, options, prepared, out, "");
  out.status = run.Run();
  return out;
}

Result<std::unique_ptr<RawPeer>> RawPeer::Open(MemoryRig& rig, SessionOptions options) {
  options.depth = 1;
  auto peer = std::make_unique<RawPeer>();
  WRIT_ASSIGN_OR_RETURN(peer->link_, rig.OpenLink(options));
  return peer;
}

protocol::Announce RawPeer::AnnounceOf(const std::string& id, uint64_t bytes,
                                       uint64_t chunk_size) const {
  protocol::Announce a;
  a.delivery_id = id;
  a.bytes = bytes;
  a.chunk_size = chunk_size;
  a.until = Rung::kValidated;
  a.retention = RetentionClass::kVolatile;
  a.sender_fabric_address = link_->local_address();
  return a;
}

PeerSaw RawPeer::Watch(const std::string& id, std::chrono::milliseconds timeout) {
  PeerSaw saw;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto message = channel().Receive(20ms);
    if (!message.ok()) {
      if (message.status().code() == ErrorCode::kTimeout) continue;
      return saw;  // the receiver closed the connection
    }
    if (const auto* grant = std::get_if<protocol::Grant>(&*message)) {
      if (grant->delivery_id == id) {
        saw.grants.push_back(*grant);
        return saw;
      }
    } else if (const auto* ring = std::get_if<protocol::Ring>(&*message)) {
      ring_ = *ring;
    } else if (const auto* refuse = std::get_if<protocol::Refuse>(&*message)) {
      if (refuse->delivery_id == id || refuse->delivery_id.empty()) {
        saw.refusal = *refuse;
        return saw;
      }
    } else {
      bool retained = false;
      for (const protocol::Receipt* receipt : protocol::ReceiptsOf(*message)) {
        if (receipt->delivery_id != id) continue;
        auto parsed = ReceiptFromJson(receipt->json);
        saw.rungs.push_back(parsed.ok() ? std::string(ReceiptRungName(parsed->rung)) : "?");
        retained = retained || (parsed.ok() && parsed->rung == ReceiptRung::kRetained);
      }
      if (retained) return saw;
    }
  }
  saw.timed_out = true;
  return saw;
}

Status RawPeer::DeliverByHand(const std::string& id, std::span<const uint8_t> bytes) {
  WRIT_RETURN_IF_ERROR(Send(AnnounceOf(id, bytes.size(), bytes.size())));
  PeerSaw saw = Watch(id, 5s);
  if (saw.grants.size() != 1) return Status::Refused(id + ": no window granted");
  WRIT_RETURN_IF_ERROR(WriteWindow(saw.grants.front(), bytes.size(), bytes));
  WRIT_ASSIGN_OR_RETURN(auto digester, vocabulary::Digester::Create(Rule::kXxh3_128));
  digester->Update(bytes);
  WRIT_RETURN_IF_ERROR(Send(protocol::Commit{id, digester->Finish(), {}}));
  saw = Watch(id, 5s);
  if (saw.rungs.empty() || saw.rungs.back() != "retained") {
    return Status::Refused(id + ": not retained");
  }
  return Status::Ok();
}

std::optional<protocol::Ring> RawPeer::AwaitRing(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ring_ && std::chrono::steady_clock::now() < deadline) (void)Watch("", 20ms);
  return ring_;
}

// Posts one write from staging slot 0 and reads its completion: the memory fabric completes
// a write before PostWrite returns.
Status RawPeer::PostFromStaging(uint64_t length, const fabric::RegionDescriptor& remote,
                                uint64_t remote_offset, uint32_t remote_data) {
  fabric::FabricPort& node = link_->node();
  fabric::WriteRequest write;
  write.request_id = link_->NextRequestId();
  write.peer = link_->peer();
  write.local = &link_->staging_region();
  write.length = length;
  write.remote = remote;
  write.remote_offset = remote_offset;
  write.remote_data = remote_data;
  WRIT_RETURN_IF_ERROR(node.PostWrite(write).status());
  std::vector<fabric::WorkCompletion> records;
  WRIT_RETURN_IF_ERROR(node.Poll(records).status());
  if (records.size() != 1 || !records.front().ok()) {
    return Status::Transport("the memory fabric did not complete a write");
  }
  return Status::Ok();
}

Status RawPeer::WriteRingSlot(const protocol::Ring& ring, uint32_t slot,
                              std::span<const uint8_t> bytes) {
  WRIT_RETURN_IF_ERROR(link_->EnsureStaging(bytes.size()));
  std::memcpy(link_->staging_slot(0), bytes.data(), bytes.size());
  return PostFromStaging(
      bytes.size(),
      fabric::RegionDescriptor{ring.remote_address + uint64_t{slot} * ring.slot_size, ring.key,
                               ring.slot_size},
      0, (ring.window_id << 16) | slot);
}

Status RawPeer::WriteWindow(const protocol::Grant& grant, uint64_t chunk_size,
                            std::span<const uint8_t> bytes) {
  WRIT_RETURN_IF_ERROR(link_->EnsureStaging(chunk_size));
  for (uint32_t c = 0; c < grant.chunk_count; ++c) {
    const uint64_t offset = (grant.first_chunk + c) * chunk_size;
    const uint64_t length = std::min<uint64_t>(chunk_size, bytes.size() - offset);
    std::memcpy(link_->staging_slot(0), bytes.data() + offset, length);
    WRIT_RETURN_IF_ERROR(PostFromStaging(
        length, fabric::RegionDescriptor{grant.remote_address, grant.key, grant.length},
        uint64_t{c} * chunk_size, (grant.window_id << 16) | c));
  }
  return Status::Ok();
}

}  // namespace writ::inprocess
