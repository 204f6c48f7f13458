// An addressed delivery's part of the announce (docs/protocol.md, "Addressed deliveries"):
// the target, and its offset or its page list, from DeliveryOptions.
#pragma once

#include <cstdint>

#include "protocol/messages.h"
#include "writ/sender.h"
#include "writ/status.h"

namespace writ::sender {

// What the sender can tell is wrong before announcing: pages or an offset without a
// target, an offset and a page list together. (Which pages exist is the receiver's check.)
Status CheckAddressedOptions(const DeliveryOptions& options);

// The chunk size for `bytes` into a page list: at most one page (bytes / pages), since a
// chunk is one write and must land within one page. Otherwise `chunk_size` unchanged.
uint64_t AddressedChunkSize(const DeliveryOptions& options, uint64_t bytes, uint64_t chunk_size);

// Fills the announce's target block.
void AddressAnnounce(const DeliveryOptions& options, protocol::Announce& announce);

}  // namespace writ::sender
