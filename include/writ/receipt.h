// Receipts: one self-describing piece of evidence per rung reached.
//
// A receipt names the object it is about (delivery id, bytes, digest), the point
// it attests (its rung and statement), who observed it, when, and the context
// without which "it completed" means nothing. It never implies another rung.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "writ/export.h"
#include "writ/status.h"
#include "writ/types.h"
#include "writ/vocabulary.h"

namespace writ {

inline constexpr const char* kReceiptSchema = "writ.receipt/1";

struct ReceiptContext {
  std::string operation;           // rdma_write | rdma_write_with_imm
  std::string transport;           // tcp | shm | roce_rc | ib_rc | iwarp | efa | other
  std::string provider;            // libfabric provider, e.g. "tcp;ofi_rxm"
  std::string device;              // fabric domain / NIC, e.g. "lo", "rxe0"
  std::string memory_type;         // dram | pmem | gpu | file
  std::string software_release;    // "writ 0.1.0; libfabric 1.17"
  std::string completion_level;    // the level the transport result relied on
  std::vector<std::string> notes;  // e.g. that shm does not check memory keys
  bool operator==(const ReceiptContext&) const = default;
};

struct DeliveryRef {
  std::string id;
  uint64_t bytes = 0;
  std::string rule;    // "xxh3-128"
  std::string digest;  // lowercase hex
  uint64_t chunks = 0;
  uint64_t chunk_size = 0;
  bool operator==(const DeliveryRef&) const = default;
};

// The five parts of a retention promise (docs/architecture.md).
struct RetentionPromise {
  std::string retention;              // volatile | process-restart | power-loss
  std::string acknowledged_point;     // what was done before this receipt
  std::string survives;               // process-running | process-restart | power-loss
  std::string promise_after_failure;  // what holds after that failure
  std::string evidence;               // the operations and their results
  bool operator==(const RetentionPromise&) const = default;
};

// One step of a group-signed receipt's inclusion path: the sibling's hash, and on which
// side of the running hash it stands.
struct MerkleStep {
  std::string side;  // left | right
  std::string hash;  // 64 hex digits
  bool operator==(const MerkleStep&) const = default;
};

// Who issued a receipt, checkable offline. "ed25519": Ed25519 over the receipt's canonical
// JSON without this field. "ed25519-merkle-sha256" (receipts signed together): Ed25519
// over "writ-receipt-group-v1" || root, where `path` leads from this receipt's leaf,
// SHA-256(0x00 || canonical JSON without this field), to `root` (docs/protocol.md).
struct ReceiptSignature {
  std::string algorithm = "ed25519";
  std::string key_id;      // first 16 hex digits of SHA-256(public key)
  std::string public_key;  // 64 hex digits
  std::string value;       // 128 hex digits
  // The group form only; empty / 0 in the plain form.
  std::string root;  // 64 hex digits
  std::vector<MerkleStep> path;
  uint64_t leaf_index = 0;
  uint64_t leaves = 0;
  bool operator==(const ReceiptSignature&) const = default;
};

struct Receipt {
  ReceiptRung rung = ReceiptRung::kTransport;
  DeliveryRef delivery;
  std::string observer;   // sender | receiver | receiver application | receiver store
  std::string issuer;     // who issued it, e.g. "writ-serve@127.0.0.1:7000"
  std::string issued_at;  // RFC 3339 UTC with milliseconds
  ReceiptContext context;
  std::string statement;           // what this receipt attests, in one sentence
  std::string does_not_establish;  // what it does not, in one sentence
  // Rung-specific fields; each is present only on its rung.
  std::optional<std::string> rule_passed;      // validated: "xxh3-128 of the complete delivery"
  std::optional<std::string> processing_step;  // processed: the hook's name
  std::optional<RetentionPromise> retention;   // retained
  std::optional<uint64_t> observed_chunks;     // transport / received: chunks observed
  // The issuing receiver's failure domain (`writ serve --domain`), signed with the rest;
  // absent when it was started without one.
  std::optional<std::string> failure_domain;
  std::optional<ReceiptSignature> signature;  // absent: unsigned
  bool operator==(const Receipt&) const = default;
};

// Canonical JSON (keys sorted, no whitespace): the form that is signed and sent.
WRIT_EXPORT std::string ReceiptToJson(const Receipt& receipt);
// Strict: wrong types, unknown rung, missing identity fields or rung-specific
// fields on the wrong rung are Malformed, naming the field.
WRIT_EXPORT Result<Receipt> ReceiptFromJson(std::string_view json_text);

// What a sender acts on in a receipt it was sent. The views point into the reading thread's
// parser: valid until that thread reads its next receipt.
struct ReceiptFacts {
  ReceiptRung rung = ReceiptRung::kTransport;
  std::string_view delivery_id;
  uint64_t bytes = 0;
  std::string_view digest;
  std::string_view retention;  // a retained receipt's class name; empty on other rungs
};
// The same strict reading as ReceiptFromJson, accepting exactly the texts it accepts (the
// two share one reader), without building the Receipt: nothing is copied or allocated.
WRIT_EXPORT Result<ReceiptFacts> ReadReceiptFacts(std::string_view json_text);

// The bytes a signature covers: the canonical JSON of the receipt without its signature.
WRIT_EXPORT std::string ReceiptSigningBytes(const Receipt& receipt);

// Internal consistency: the digest's length fits the rule, chunks fit bytes and chunk
// size, the observer fits the rung, a retention class matches what it survives.
// Validation errors name the field.
WRIT_EXPORT Status CheckReceiptConsistency(const Receipt& receipt);

// Consistency, then the signature against its embedded public key, and against
// `expected_public_key_hex` when given. kValidation errors name what failed.
WRIT_EXPORT Status VerifyReceipt(const Receipt& receipt,
                                 const std::string& expected_public_key_hex = "");

// "2026-11-29T07:50:00.123Z" for now.
WRIT_EXPORT std::string NowRfc3339();

}  // namespace writ
