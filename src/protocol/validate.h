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
// Embedded JSON (receipts, query answers) is parsed in full when `parse_json`; the sending
// side passes false: the JSON it sends was just serialised by writ itself, and re-parsing
// each outgoing receipt was 7 % of a receiver's CPU for 4 KiB deliveries.
Status Validate(const Message& message, const Limits& limits, bool parse_json = true);

// Chunks of an announced delivery: ceil(bytes / chunk_size), 0 for 0 bytes.
// The announce must have passed Validate (chunk_size > 0).
uint64_t ChunkCount(const Announce& announce);

// Whether a grant fits the delivery it is for: same id, chunks inside the
// delivery, and a window long enough for the bytes of those chunks.
Status CheckGrantFits(const Announce& announce, const Grant& grant);

}  // namespace writ::protocol
