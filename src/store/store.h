// Retention: where validated deliveries are kept, and what that survives.
// The receiver writes a delivery's bytes as its windows complete, then commits
// it only after validation; an uncommitted delivery is never reported retained.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/lifecycle.h"
#include "store/sync_steps.h"
#include "writ/status.h"
#include "writ/types.h"
#include "writ/vocabulary.h"

namespace writ::store {

struct DeliveryMeta {
  std::string id;
  uint64_t bytes = 0;
  uint64_t chunk_size = 0;
  Rule rule = Rule::kXxh3_128;
  std::vector<uint8_t> digest;  // empty at Begin when the announce carried none (SetDigest)
  // The key id of the authenticated sender that delivered the bytes; empty when unsigned.
  // Only that sender is answered from the store without moving the bytes again.
  std::string sender;
  // The store holds these very bytes (same id and digest) retained in a weaker class: this
  // copy, once retained in the stronger class, takes the place of that one (docs/retention.md,
  // "Upgrading a retained delivery").
  bool supersedes_weaker = false;
  // A scatter-gather delivery's region lengths, in order (store/regions.h); empty: plain.
  std::vector<uint64_t> region_lengths;
};

// What the store did to reach its class: the retention receipt's acknowledged point
// and evidence.
struct RetentionEvidence {
  RetentionClass retention = RetentionClass::kVolatile;
  std::string acknowledged_point;
  std::string promise_after_failure;
  std::string evidence;
  std::optional<SyncSteps> steps;  // the durable store's sync sequence, that `evidence` tells
  // The class's time-to-live, when it has one: held at least until then (Unix ms), which
  // the retained receipt promises. 0: no time promised.
  uint64_t held_until_ms = 0;
  std::chrono::milliseconds ttl{0};
};

struct RetainedDelivery {
  DeliveryMeta meta;
  RetentionClass retention = RetentionClass::kVolatile;
  std::vector<std::string> receipts;  // receipt JSON, in rung order
  uint64_t held_until_ms = 0;         // promised until then (Unix ms); 0: no time promised
};

// Retained bytes read in place (Store::View): valid while `keep` lives.
struct HeldView {
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> keep;
};

// One delivery being written. Dropping it without Commit discards the bytes.
class PayloadWriter {
 public:
  virtual ~PayloadWriter() = default;
  // Stores bytes at `offset`. Bytes that already lie in this writer's placement memory at
  // that offset (see Placement) are only counted, not copied.
  virtual Status Write(uint64_t offset, std::span<const uint8_t> bytes) = 0;
  // Memory where the transport may place [offset, offset + length) directly, so the bytes
  // are stored without a copy; nullptr when this writer has none (then Write copies). The
  // memory stays valid while the writer lives.
  virtual Result<uint8_t*> Placement(uint64_t offset, uint64_t length) {
    (void)offset;
    (void)length;
    return nullptr;
  }
  // Reads back bytes written so far (a processing step runs before the commit).
  virtual Status Read(uint64_t offset, std::span<uint8_t> out) = 0;
  // The delivery's digest, when Begin's meta had none (the sender sent it with its commit);
  // called before Commit.
  virtual void SetDigest(std::vector<uint8_t> digest) = 0;
  // Makes the delivery retained at its class, with the receipts issued so far.
  virtual Result<RetentionEvidence> Commit(const std::vector<std::string>& receipts) = 0;
  // An upgrade (DeliveryMeta::supersedes_weaker): the weaker copy was promised until
  // `held_until_ms` (Unix ms; 0: until removed), and this copy is held at least as long,
  // whatever its own class's time-to-live: an upgrade, whoever asks for it, never shortens
  // a promise already made. Called by the store before any Write.
  virtual void KeepWeakerPromise(uint64_t held_until_ms) { (void)held_until_ms; }
};

class Store {
 public:
  virtual ~Store() = default;
  // Whether this store can retain at `retention` (e.g. only volatile without --data).
  virtual bool Offers(RetentionClass retention) const = 0;
  virtual Result<std::optional<RetainedDelivery>> Lookup(const std::string& id) = 0;
  // Lookup for an answer that says "retained" without moving bytes (a query, a re-send
  // answered with the existing receipts): the held bytes are re-hashed against the digest
  // first. A delivery whose bytes fail is no longer retained (the durable store quarantines
  // it): nullopt, so the answer is "unknown" and a re-send moves the bytes again.
  virtual Result<std::optional<RetainedDelivery>> LookupVerified(const std::string& id) = 0;
  // Refused (space) when the delivery cannot fit. `meta` by value: the writer keeps it.
  virtual Result<std::unique_ptr<PayloadWriter>> Begin(DeliveryMeta meta,
                                                       RetentionClass retention) = 0;
  // Adds a receipt issued after the commit (the retention receipt itself).
  virtual Status AppendReceipt(const std::string& id, const std::string& receipt_json) = 0;
  // Several, in order (receipts signed with the retention receipt, which comes last); the
  // first failure ends it.
  virtual Status AppendReceipts(const std::string& id, std::span<const std::string> receipts) {
    for (const std::string& json : receipts) WRIT_RETURN_IF_ERROR(AppendReceipt(id, json));
    return Status::Ok();
  }
  // Reads back retained bytes.
  virtual Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) = 0;
  // Retained bytes in place, without a copy, where this store holds them in memory
  // (writ::Receiver::View); a store that keeps them in files answers Unsupported.
  virtual Result<HeldView> View(const std::string& id, uint64_t offset, uint64_t length) {
    (void)offset;
    (void)length;
    WRIT_ASSIGN_OR_RETURN(auto held, Lookup(id));
    if (!held) return Status::NotFound("no retained delivery " + id);
    return Status::Unsupported(id + " is retained " + std::string(RetentionName(held->retention)) +
                               ", in a file, not in memory: Read copies it");
  }
  // Removes a retained delivery (lifecycle.h): NotFound naming the id when none is held;
  // Refused while its receipt's promised time (held_until_ms) is ahead of `now_ms`, unless
  // forced. The durable store drops the row durably before it unlinks the payload, so a
  // crash or a failed sync never leaves a row naming a missing payload.
  virtual Result<Removal> Remove(const std::string& id, bool force, uint64_t now_ms) = 0;
  // Ids of retained deliveries whose promised time has passed at `now_ms`.
  virtual Result<std::vector<std::string>> Expired(uint64_t now_ms) = 0;
  // Forgets a retained copy that a copy in a stronger class (another store's) superseded;
  // Ok when there is none.
  virtual Status DropSuperseded(const std::string& id) {
    (void)id;
    return Status::Ok();
  }
};

// Reads a retained delivery back through store.Read and hashes it: Ok, or Validation naming
// the mismatch.
Status VerifyHeldBytes(Store& store, const DeliveryMeta& meta);

}  // namespace writ::store
