// One sender session's connections: the control channel (after the receiver's hello),
// the fabric node connected to the receiver, and the registered staging buffers. Kept
// for every delivery of the session.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/fabric_port.h"
#include "fabric/memory_region.h"
#include "protocol/control_channel.h"
#include "protocol/messages.h"
#include "sender/ring_slots.h"
#include "writ/sender.h"
#include "writ/status.h"

namespace writ::sender {

// One of the session's `depth` write requests in flight, and its staging slot of the same
// index; shared by every delivery of the session.
struct WriteSlot {
  const void* owner = nullptr;  // the delivery writing through it; null: free
  bool staged = false;          // source: the staging slot, else the registered source
  bool gathered = false;        // source: `pieces` of registered scatter-gather regions
  std::vector<fabric::LocalPiece> pieces;
  uint64_t request_id = 0;
  uint64_t chunk = 0;
  uint32_t window = 0;
  uint32_t attempt = 0;
  uint64_t length = 0;
  bool busy() const { return owner != nullptr; }
};

class Link {
 public:
  // `open_fabric` opens this side's fabric (tests wrap it in a FaultInjectingFabric).
  static Result<std::unique_ptr<Link>> Open(
      const SessionOptions& options,
      const fabric::FabricOpener& open_fabric = fabric::OpenFabricNode);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  protocol::ControlChannel& channel() { return *channel_; }
  fabric::FabricPort& node() { return *node_; }
  const fabric::Peer& peer() const { return peer_; }
  // This side's endpoint name on RDM providers (the receiver adds it to its address vector
  // for the connection's life, and removes it after); on MSG providers this side's end of
  // the fabric connection. The receiver counts a notification only from this address.
  const std::vector<uint8_t>& local_address() const { return local_address_; }
  const protocol::Hello& hello() const { return hello_; }
  uint32_t depth() const { return depth_; }
  // "writ-send@pidN": the issuer of this side's transport receipts (the pid read once).
  const std::string& issuer() const { return issuer_; }
  bool busy_poll() const { return busy_poll_; }  // SessionOptions::busy_poll
  // Unique over the session, so a late record can never be taken for a later request.
  uint64_t NextRequestId() { return next_request_id_++; }

  // The session's write slots (depth of them), whichever delivery holds them.
  std::vector<WriteSlot>& write_slots() { return write_slots_; }
  bool WritesIdle() const;
  // Registered staging of `depth` slots of at least `slot_bytes` each, allocated on
  // first need and reallocated (re-registered) only to grow. No write may be in flight.
  Status EnsureStaging(uint64_t slot_bytes);
  // Whether staging of `slot_bytes` per slot needs no reallocation.
  bool StagingFits(uint64_t slot_bytes) const;
  uint8_t* staging_slot(size_t index) const { return staging_ + index * slot_bytes_; }
  uint64_t staging_offset(size_t index) const { return index * slot_bytes_; }
  const fabric::MemoryRegion& staging_region() const { return staging_region_; }
  // The standing window the receiver granted (SessionOptions::ring; else never adopted).
  RingSlots& ring() { return ring_; }
  Status AdoptRing(const protocol::Ring& ring) {
    return ring_enabled_ ? ring_.Adopt(*node_, ring) : Status::Ok();
  }

  // Closes the staging registration, the fabric node and the control connection.
  Status Close();

 private:
  Link() = default;
  Status ConnectFabric(const std::string& wanted_provider, const std::string& control_host,
                       const fabric::FabricOpener& open_fabric);
  void FreeStaging();

  std::optional<protocol::ControlChannel> channel_;
  protocol::Hello hello_;
  std::unique_ptr<fabric::FabricPort> node_;
  fabric::Peer peer_;
  std::vector<uint8_t> local_address_;
  uint32_t depth_ = 0;
  std::string issuer_;
  bool busy_poll_ = false;
  std::vector<WriteSlot> write_slots_;
  uint64_t next_request_id_ = 1;
  uint8_t* staging_ = nullptr;
  uint64_t slot_bytes_ = 0;
  fabric::MemoryRegion staging_region_;
  bool ring_enabled_ = true;
  RingSlots ring_;
};

}  // namespace writ::sender
