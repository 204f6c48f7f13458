// A real receiver and real senders in one process over a MemoryFabric
// (src/fabric/memory_fabric.h): no provider, no fabric sockets. The control channel stays
// the real ControlChannel over loopback TCP (the receiver's listener has no other seam).
//
// MemoryRig starts the receiver; Deliver runs one delivery as a sender session does
// (sender::DeliveryRun over a Link); RawPeer speaks the protocol by hand over a Link of its
// own, for what the public API never sends.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/fault_fabric.h"
#include "fabric/memory_fabric.h"
#include "protocol/messages.h"
#include "sender/delivery_run.h"
#include "sender/link.h"
#include "temp_dir.h"
#include "writ/receiver.h"
#include "writ/sender.h"

namespace writ::inprocess {

std::vector<uint8_t> PatternBytes(uint64_t stream, size_t bytes);
// The rungs of `out`'s receipts, in order ("transport", "received", ...).
std::vector<std::string> RungNames(const DeliveryOutcome& out);

// What a peer saw about one delivery before it ended (a refusal, its retained receipt, or
// the wait's end).
struct PeerSaw {
  std::vector<std::string> rungs;  // receipts, in order
  std::optional<protocol::Refuse> refusal;
  std::vector<protocol::Grant> grants;
  bool timed_out = false;
};

class MemoryRig {
 public:
  MemoryRig();
  ~MemoryRig();

  // Starts the receiver on the rig's fabric (StartWrapped: a FaultInjectingFabric around
  // its memory port, handed to `made`).
  // `store_faults`: the FaultInjectionEnv spec (src/store/fault_env.h) for the --data store.
  Status Start(ReceiverOptions options, std::string store_faults = "");
  Status StartWrapped(ReceiverOptions options,
                      std::function<void(fabric::FaultInjectingFabric&)> made);
  // A sender link to the receiver over the rig's fabric; `made`, when given, gets the
  // FaultInjectingFabric wrapped around its port.
  Result<std::unique_ptr<sender::Link>> OpenLink(
      SessionOptions options = {},
      std::function<void(fabric::FaultInjectingFabric&)> made = nullptr);

  // One delivery of `bytes` over `link`, as a session runs it (signed with `identity`
  // when given).
  DeliveryOutcome Deliver(sender::Link& link, std::span<const uint8_t> bytes,
                          const DeliveryOptions& options,
                          std::optional<uint64_t> corrupt_chunk = std::nullopt,
                          const receipt::Identity* identity = nullptr);

  Receiver& receiver() { return *receiver_; }
  fabric::MemoryFabric& fabric() { return fabric_; }
  const std::string& dir() const { return dir_.path(); }
  std::string address() const { return receiver_->listen_address(); }
  // ReceiverOptions the tests start from: small windows, short timeouts left as they are.
  ReceiverOptions BaseOptions() const;

 private:
  testing::TempDir dir_{"writ-inprocess"};
  fabric::MemoryFabric fabric_;
  std::unique_ptr<Receiver> receiver_;
};

// The protocol by hand over a memory link.
class RawPeer {
 public:
  static Result<std::unique_ptr<RawPeer>> Open(MemoryRig& rig, SessionOptions options = {});

  sender::Link& link() { return *link_; }
  protocol::ControlChannel& channel() { return link_->channel(); }
  // An announce from this peer (its fabric address filled in), unsigned, volatile.
  protocol::Announce AnnounceOf(const std::string& id, uint64_t bytes, uint64_t chunk_size) const;
  Status Send(const protocol::Message& message) { return channel().Send(message); }
  // Reads until `id` is granted a window, refused or retained, or `timeout` passes; a
  // refusal of the connection as a whole (empty id) also ends it.
  PeerSaw Watch(const std::string& id, std::chrono::milliseconds timeout);
  // Writes `bytes` into the window `grant` describes, chunk by chunk, each a
  // write-with-data naming its window and chunk; waits for each completion.
  Status WriteWindow(const protocol::Grant& grant, uint64_t chunk_size,
                     std::span<const uint8_t> bytes);
  // Writes `bytes` into slot `slot` of `ring` (a write-with-data naming the ring and the
  // slot); waits for its completion.
  Status WriteRingSlot(const protocol::Ring& ring, uint32_t slot, std::span<const uint8_t> bytes);
  // A whole delivery by hand (one chunk): announce, write, commit its digest; Ok once its
  // retained receipt came. The connection's first retained delivery earns it a ring.
  Status DeliverByHand(const std::string& id, std::span<const uint8_t> bytes);
  // The standing window the receiver granted this connection (seen by Watch), waiting up
  // to `timeout` for it.
  std::optional<protocol::Ring> AwaitRing(std::chrono::milliseconds timeout);

 private:
  Status PostFromStaging(uint64_t length, const fabric::RegionDescriptor& remote,
                         uint64_t remote_offset, uint32_t remote_data);

  std::unique_ptr<sender::Link> link_;
  std::optional<protocol::Ring> ring_;
};

}  // namespace writ::inprocess
