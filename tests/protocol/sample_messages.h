// One valid, realistic instance of every control message (the RC-233 example),
// shared by the tests and the fuzz seed writer.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/messages.h"

namespace writ::protocol::testing {

inline std::vector<uint8_t> Bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(first + i * 7);
  return out;
}

inline Hello SampleHello() { return Hello{1, "tcp;ofi_rxm", Bytes(16, 0x02), "receiver-1", 16}; }

inline Announce SampleAnnounce() {
  return Announce{"RC-233",
                  25165824,
                  8388608,
                  Rule::kXxh3_128,
                  Bytes(16, 0xa0),
                  Rung::kValidated,
                  RetentionClass::kVolatile,
                  Bytes(16, 0x10),
                  Bytes(32, 0x20),
                  Bytes(16, 0x30),
                  1764400000000,
                  Bytes(64, 0x40),
                  {}};
}

inline Grant SampleGrant() {
  return Grant{"RC-233", 7, 0x7f0000001000, 0xdeadbeefcafef00d, 8388608, 1, 1};
}

inline Commit SampleCommit() { return Commit{"RC-233", {0xe3, 0x06, 0x92, 0x83}, {}}; }

inline Receipt SampleReceipt() {
  return Receipt{"RC-233", R"({"rung":"validated","rule":"xxh3-128","bytes":25165824})"};
}

inline Refuse SampleRefuse() {
  return Refuse{"RC-233", RefuseReason::kConflictingId, "RC-233 is held with a different digest"};
}

inline Abort SampleAbort() { return Abort{"RC-233", "sender gave up: read error on chunk 2"}; }

inline Query SampleQuery() {
  Query q;
  q.delivery_id = "RC-233";
  return q;
}

inline QueryAnswer SampleQueryAnswer() {
  return QueryAnswer{"RC-233", R"({"id":"RC-233","state":"retained","retention":"volatile"})"};
}

// Receipts ready together: two rungs of one delivery, then another delivery's.
inline Receipts SampleReceipts() {
  return Receipts{{SampleReceipt(),
                   Receipt{"RC-233", R"({"rung":"retained","retention":"volatile"})"},
                   Receipt{"RC-234", R"({"rung":"received","bytes":4096})"}}};
}

// A standing window of 64 slots of 64 KiB, a 4 KiB delivery written into slot 3 of it, and
// two slots given back.
inline Ring SampleRing() { return Ring{9, 0x7f0000200000, 0x1122334455667788, 65536, 64}; }

inline Deliver SampleDeliver() {
  Announce a = SampleAnnounce();
  a.delivery_id = "RC-234";
  a.bytes = 4096;
  a.chunk_size = 4096;
  a.digest = Bytes(16, 0xb0);
  return Deliver{3, a};
}

inline SlotsFree SampleSlotsFree() { return SlotsFree{9, {3, 5}}; }

inline Remove SampleRemove() {
  return Remove{"d-9",
                1,
                std::vector<uint8_t>(32, 0x11),
                std::vector<uint8_t>(16, 0x22),
                42,
                std::vector<uint8_t>(64, 0x33)};
}

inline RemoveAnswer SampleRemoveAnswer() { return RemoveAnswer{"d-9", "{\"removed\":\"d-9\"}"}; }

// Chunks 0 to 2 of window 9, their writes completed (rxm: docs/protocol.md).
inline Written SampleWritten() { return Written{"RC-233", 9, {0, 1, 2}}; }

inline std::vector<Message> AllSamples() {
  return {SampleHello(),       SampleAnnounce(), SampleGrant(),        SampleCommit(),
          SampleReceipt(),     SampleRefuse(),   SampleAbort(),        SampleQuery(),
          SampleQueryAnswer(), SampleReceipts(), SampleRing(),         SampleDeliver(),
          SampleSlotsFree(),   SampleRemove(),   SampleRemoveAnswer(), SampleWritten()};
}

}  // namespace writ::protocol::testing
