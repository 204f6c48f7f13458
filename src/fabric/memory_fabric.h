// MemoryFabric: a FabricPort with no provider and no sockets, for running a receiver, a
// sender and whole deliveries inside one process (tests, bench/inprocess_cost).
//
// One MemoryFabric is the wire; Opener() opens ports on it (each a reliable-datagram
// endpoint, provider "memory"). A port's LocalAddress names it on its fabric; AddPeer makes
// another port writable. Register hands out regions with fresh keys. PostWrite checks the
// target's key, bounds and access as an RMA target does and copies the bytes into the
// peer's registered region before it returns; then the writer's completion (at the level
// asked for: every level is granted) and, for a write-with-data, the target's notification
// are queued for their ports' Poll. The notification names the writer as FI_SOURCE does on
// shm: its address in the target's address vector, FI_ADDR_NOTAVAIL when the target never
// added it. A wrong key, a range past the region or a region that is not remotely writable
// gives the writer one FI_EIO error record (provider error 10, remote access error, as
// verbs reports it) and places nothing; a write to a closed port gives FI_ENOTCONN.
//
// Deterministic: keys and addresses are counters, a write lands wholly before PostWrite
// returns, records come out in the order they were made. Every method may be called from
// any thread. Each port has an eventfd: PrepareWait hands it out once the port's queue is
// empty, and the next record raises it, so a progress thread blocks instead of spinning.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "fabric/fabric_port.h"

namespace writ::fabric {

inline constexpr const char* kMemoryProvider = "memory";

// What happened on one fabric, for tests and benchmarks to assert against.
struct MemoryFabricCounts {
  uint64_t ports = 0;               // opened
  uint64_t registrations = 0;       // Register calls that returned a region
  uint64_t writes = 0;              // PostWrite calls that returned a posted write
  uint64_t bytes_placed = 0;        // copied into targets' regions
  uint64_t notifications = 0;       // write-with-data records queued at targets
  uint64_t notifications_read = 0;  // of those, handed to their target's Poll
  uint64_t access_errors = 0;       // writes refused by the target (key, bounds, access)
};

class MemoryFabric {
 public:
  MemoryFabric();
  ~MemoryFabric();
  MemoryFabric(const MemoryFabric&) = delete;
  MemoryFabric& operator=(const MemoryFabric&) = delete;

  // Opens ports on this fabric whatever provider the options name (the receiver's hello
  // then names "memory", and the sender asks for it). Ports and the opener keep the
  // fabric's state alive: the MemoryFabric object may go first.
  FabricOpener Opener();
  Result<std::unique_ptr<FabricPort>> Open(const NodeOptions& options);

  MemoryFabricCounts counts() const;
  // Waits until targets have read (polled) `n` notifications in all, or `timeout` passed;
  // whether they had.
  bool AwaitNotificationsRead(uint64_t n, std::chrono::milliseconds timeout) const;

  struct Hub;  // memory_fabric.cc

 private:
  static Result<std::unique_ptr<FabricPort>> OpenOn(const std::shared_ptr<Hub>& hub,
                                                    const NodeOptions& options);

  std::shared_ptr<Hub> hub_;
};

// The provider every memory port reports.
const ProviderInfo& MemoryProviderInfo();

}  // namespace writ::fabric
