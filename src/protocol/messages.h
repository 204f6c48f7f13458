// The control messages exchanged over the TCP control connection, and the
// names of the enums they carry. Wire encoding: codec.h; semantics: validate.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "writ/status.h"
#include "writ/types.h"
#include "writ/vocabulary.h"

namespace writ::protocol {

// 2: the announce's digest may be empty (not known yet), the commit carries the digest.
// 3: receipts ready at the same moment travel in one `receipts` message, and a receipt may
// carry the group signature form ("ed25519-merkle-sha256"); the hello names how many
// deliveries a connection may have in flight (max_in_flight).
// 4: standing windows: `ring`, `deliver` (announce and commit in one message, the bytes
// written into a ring slot without a grant) and `slots-free`.
// 5: `written`: where the provider names no writer of a remote write (RDM without
// FI_SOURCE: ofi_rxm), the sender says over its own control connection which chunks its
// completed writes put in a window, and a ring slot's `deliver` follows its write.
inline constexpr uint16_t kProtocolVersion = 6;

// The public vocabulary (include/writ/types.h), carried on the wire as one byte each.
using Rule = ::writ::Rule;
using Rung = ::writ::Rung;
using RetentionClass = ::writ::RetentionClass;
enum class RefuseReason : uint8_t {
  kAuth = 1,
  kSpace,
  kConflictingId,
  kOversize,
  kMalformed,
  kUnknownDelivery,
  kLimit,
  kUnsupported,
  kInternal,
  kValidation,    // the delivery failed its rule (digest or length mismatch)
  kRetention,     // the requested retention class cannot be reached (not offered, sync failed)
  kShuttingDown,  // the receiver is stopping: admits nothing new, or ended this delivery
  kProcessing,    // the processing step (serve --exec) failed for this delivery
  kTarget,        // an addressed delivery's target: unknown, out of range, busy or revoked
};

// The wire's own names; the public enums' names are writ/vocabulary.h's.
// An out-of-range value (possible after a cast from the wire) is named "unknown".
std::string_view RefuseReasonName(RefuseReason reason);
Result<RefuseReason> ParseRefuseReason(std::string_view name);
bool IsKnown(RefuseReason reason);
using ::writ::IsKnown;

inline constexpr size_t kSenderKeyBytes = 32;
// Introduces an announce's target block: a value no region count can take.
inline constexpr uint32_t kTargetMark = 0xffffffff;
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kSignatureBytes = 64;
// The longest digest a commit may carry (every rule's is shorter or equal).
inline constexpr size_t kMaxDigestBytes = 64;

// server -> client, first message on a new control connection.
struct Hello {
  uint16_t version = kProtocolVersion;  // the highest protocol version the server speaks
  std::string provider;                 // libfabric provider of the data path
  std::vector<uint8_t> fabric_address;  // where the sender writes to (fi_getname)
  std::string receiver_id;
  // Deliveries this connection may carry at once (announced, not yet ended); at least 1.
  uint32_t max_in_flight = 1;
  bool operator==(const Hello&) const = default;
};

// client -> server: start a delivery.
struct Announce {
  std::string delivery_id;
  uint64_t bytes = 0;
  uint64_t chunk_size = 0;
  Rule rule = Rule::kXxh3_128;
  // Of the whole delivery, DigestSize(rule) bytes; empty when the sender does not know it
  // yet (it computes it while writing and sends it with the commit).
  std::vector<uint8_t> digest;
  Rung until = Rung::kValidated;
  RetentionClass retention = RetentionClass::kVolatile;
  std::vector<uint8_t> sender_fabric_address;  // empty when the provider needs none
  // Sender authentication: all four present (Ed25519 key, 16-byte nonce, time in ms since
  // the epoch, signature over AnnounceSigningBytes), or all four empty / zero.
  std::vector<uint8_t> sender_key;
  std::vector<uint8_t> nonce;
  uint64_t time_ms = 0;
  std::vector<uint8_t> signature;
  // A scatter-gather delivery: the lengths of its regions, in order, summing to `bytes`
  // (at most Limits::max_regions). Empty: a plain delivery. Optional on the wire (after
  // `signature`, only when non-empty), and covered by the signature.
  std::vector<uint64_t> region_lengths;
  // An addressed delivery (docs/protocol.md, "Addressed deliveries"): written into the
  // receiver application's exposed buffer `target` at byte `target_offset`. Empty: into the
  // receiver's store. Optional on the wire (a marked block after the region table), and
  // covered by the signature.
  std::string target = "";  // initialized: aggregate initializations that omit it stay quiet
  uint64_t target_offset = 0;
  // A page-list delivery into a paged target: delivery byte i * page_size lands in page
  // target_pages[i]. Optional on the wire (after target_offset, only when non-empty; then
  // target_offset is 0), at most Limits::max_target_pages, covered by the signature.
  std::vector<uint64_t> target_pages = {};
  bool operator==(const Announce&) const = default;
};

// server -> client: a window for chunks [first_chunk, first_chunk + chunk_count).
struct Grant {
  std::string delivery_id;
  uint32_t window_id = 0;
  uint64_t remote_address = 0;
  uint64_t key = 0;
  uint64_t length = 0;
  uint64_t first_chunk = 0;
  uint32_t chunk_count = 0;
  bool operator==(const Grant&) const = default;
};

// client -> server: every chunk was written (the receiver still decides from
// its own notifications), and the delivery's digest, DigestSize(rule) bytes. After a
// signed announce the commit is signed by the same key (CommitSigningBytes), so the
// digest the bytes are validated against is the sender's own; otherwise unsigned.
struct Commit {
  std::string delivery_id;
  std::vector<uint8_t> digest;
  std::vector<uint8_t> signature;
  bool operator==(const Commit&) const = default;
};

// server -> client: one receipt (JSON object text, self-describing).
struct Receipt {
  std::string delivery_id;
  std::string json;
  bool operator==(const Receipt&) const = default;
};

// server -> client: receipts that were ready at the same moment (the rungs one delivery
// reached together, or receipts of several deliveries), in the order they were issued;
// each is handled as if it came in its own `receipt` message.
inline constexpr size_t kMaxReceiptsPerMessage = 64;
struct Receipts {
  std::vector<Receipt> receipts;  // 1 to kMaxReceiptsPerMessage
  bool operator==(const Receipts&) const = default;
};

// An empty delivery_id refuses the connection as a whole (e.g. auth).
struct Refuse {
  std::string delivery_id;
  RefuseReason reason = RefuseReason::kInternal;
  std::string detail;
  bool operator==(const Refuse&) const = default;
};

// Either side gives up on a delivery; an empty delivery_id gives up the connection.
struct Abort {
  std::string delivery_id;
  std::string detail;
  bool operator==(const Abort&) const = default;
};

// Signed like an announce (QuerySigningBytes) when the sender has an identity; a receiver
// with an allow list answers only signed queries from listed keys.
struct Query {
  std::string delivery_id;
  std::vector<uint8_t> sender_key;
  std::vector<uint8_t> nonce;
  uint64_t time_ms = 0;
  std::vector<uint8_t> signature;
  bool operator==(const Query&) const = default;
};

struct QueryAnswer {
  std::string delivery_id;
  std::string json;
  bool operator==(const QueryAnswer&) const = default;
};

// server -> client: a standing window (docs/protocol.md, "Standing windows"): `slot_count`
// slots of `slot_size` bytes at `remote_address` that this connection may write small
// deliveries into without asking; each write's notification is window_id << 16 | slot.
inline constexpr uint32_t kMaxRingSlots = 65536;  // 16 bits of notification index a slot
struct Ring {
  uint32_t window_id = 0;
  uint64_t remote_address = 0;
  uint64_t key = 0;
  uint64_t slot_size = 0;
  uint32_t slot_count = 0;
  bool operator==(const Ring&) const = default;
};

// client -> server: a delivery written into ring slot `slot`, announced and committed at
// once. Its announce carries the digest of the slot's bytes (the sender read and digested
// them before sending this), so the announce's one signature, when signed, covers the
// digest the bytes are validated against: a deliver has no commit of its own.
struct Deliver {
  uint32_t slot = 0;
  Announce announce;
  bool operator==(const Deliver&) const = default;
};

// server -> client: ring slots copied out and cleared, free to be written again.
struct SlotsFree {
  uint32_t window_id = 0;
  std::vector<uint32_t> slots;  // 1 to kMaxRingSlots
  bool operator==(const SlotsFree&) const = default;
};

// client -> server, only where the provider names no writer of a remote write
// (docs/protocol.md, "Writes attested by their sender"): these chunks of window
// `window_id`, indexes within the window, were written by this sender and their writes
// completed (at the delivery-complete level where the provider grants it). A chunk counts
// as landed when both this and its notification arrived.
inline constexpr uint32_t kMaxWrittenChunks = 65536;  // 16 bits of chunk index a window
struct Written {
  std::string delivery_id;
  uint32_t window_id = 0;
  std::vector<uint32_t> chunks;  // 1 to kMaxWrittenChunks, each < 65536
  bool operator==(const Written&) const = default;
};

// client -> server: remove retained delivery `delivery_id` (`writ rm`). Always signed
// (RemoveSigningBytes); allowed for the key that delivered it and the receiver's operator
// keys (serve --admin-key). `force` (0 or 1): even before the time its receipt promised.
struct Remove {
  std::string delivery_id;
  uint8_t force = 0;
  std::vector<uint8_t> sender_key;
  std::vector<uint8_t> nonce;
  uint64_t time_ms = 0;
  std::vector<uint8_t> signature;
  bool operator==(const Remove&) const = default;
};

// server -> client: what was removed, as `writ store rm --json` prints it.
struct RemoveAnswer {
  std::string delivery_id;
  std::string json;
  bool operator==(const RemoveAnswer&) const = default;
};

using Message =
    std::variant<Hello, Announce, Grant, Commit, Receipt, Refuse, Abort, Query, QueryAnswer,
                 Receipts, Ring, Deliver, SlotsFree, Remove, RemoveAnswer, Written>;

// The wire type code of each message; also the order of the variant plus one.
enum class MessageType : uint8_t {
  kHello = 1,
  kAnnounce = 2,
  kGrant = 3,
  kCommit = 4,
  kReceipt = 5,
  kRefuse = 6,
  kAbort = 7,
  kQuery = 8,
  kQueryAnswer = 9,
  kReceipts = 10,
  kRing = 11,
  kDeliver = 12,
  kSlotsFree = 13,
  kRemove = 14,
  kRemoveAnswer = 15,
  kWritten = 16,
};

MessageType TypeOf(const Message& message);
// "hello", "announce", "grant", "commit", "receipt", "refuse", "abort", "query", "query-answer",
// "receipts", "ring", "deliver", "slots-free", "remove", "remove-answer", "written".
std::string_view MessageTypeName(MessageType type);
std::string_view MessageTypeName(const Message& message);

// The receipts `message` carries: itself for `receipt`, every one of `receipts`, none else.
std::vector<const Receipt*> ReceiptsOf(const Message& message);

}  // namespace writ::protocol
