// Semantic checks of a message: what a structurally sound frame must also
// satisfy before anyone acts on it. DecodeFrame runs Validate on every
// message; ControlChannel::Send runs it before anything leaves the process.
#pragma once

#include <cstdint>

#include "protocol/limits.h"
#include "protocol/messages.h"
#include "writ/status.h"

namespace writ::protocol {

// Errors are kMalformed and name the message and field:
//   "announce.digest: 15 bytes, xxh3-128 needs 16".
Status Validate(const Message& message, const Limits& limits);

// Chunks of an announced delivery: ceil(bytes / chunk_size), 0 for 0 bytes.
// The announce must have passed Validate (chunk_size > 0).
uint64_t ChunkCount(const Announce& announce);

// Whether a grant fits the delivery it is for: same id, chunks inside the
// delivery, and a window long enough for the bytes of those chunks.
Status CheckGrantFits(const Announce& announce, const Grant& grant);

}  // namespace writ::protocol
