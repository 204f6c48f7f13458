// The receiving end (`writ serve`): grants windows, observes every chunk's
// notification, validates whole deliveries, optionally processes them, retains
// them and issues a receipt for each rung it really reached.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "writ/export.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

// What a processing hook is shown: a validated delivery, read through `read`.
struct DeliveryView {
  std::string id;
  uint64_t bytes = 0;
  std::string digest_hex;
  std::function<Status(uint64_t offset, std::span<uint8_t> out)> read;
  // True once the receiver's drain deadline passed (Receiver::Shutdown): a long step should
  // then return an error soon; the delivery is refused as aborted by the shutdown.
  std::function<bool()> stop_requested;
};

// A named application step run on every validated delivery that asks for it.
// Its success is the `processed` rung; the CLI registers none.
struct ProcessingStep {
  std::string name;
  std::function<Status(const DeliveryView&)> run;
};

struct ReceiverOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;                   // 0: pick one (see Receiver::listen_address)
  std::string provider;                       // libfabric provider; empty picks the best available
  uint64_t window_pool_bytes = 256ull << 20;  // all windows together
  uint64_t window_bytes = 32ull << 20;        // one window; a chunk must fit in it
  uint32_t windows_per_delivery = 4;          // windows one delivery may hold at once
  // Threads that digest received windows (never the fabric's progress thread nor a
  // connection's); 0: min(4, hardware threads).
  uint32_t digest_threads = 0;
  uint32_t max_connections = 64;
  // Limits, each enforced with a named refusal. A "sender" is its announce key when
  // senders authenticate (--allow), else its host.
  uint32_t max_message_bytes = 1 << 20;      // one control frame (an announce included)
  uint64_t max_delivery_bytes = 1ull << 40;  // one delivery
  uint32_t max_deliveries_per_sender = 16;   // in progress at once
  uint32_t max_windows_per_sender = 16;      // granted at once, over all its deliveries
  // Connections from one address (IP, whatever the port) at once. When all max_connections
  // are taken, a new connection takes the place of the one idle longest (connected with no
  // delivery in progress), so idle connections cannot lock a sender out.
  uint32_t max_connections_per_address = 16;
  // Connections one authenticated sender (its key) may hold at once, counted from its
  // first signed announce on each; a connection has at most one delivery in progress.
  uint32_t max_connections_per_sender = 16;
  // Liveness (docs/security.md, "Limits"). Every one ends what it bounds with a named
  // refusal, revokes its windows and frees its id and its thread's connection.
  // From accept to the first complete message (announce or query): a sender sends its
  // first one right after the receiver's hello, so seconds are generous.
  std::chrono::milliseconds handshake_timeout{10000};
  // A connection with no delivery in progress and no complete message for this long.
  std::chrono::milliseconds idle_timeout{120000};
  // A delivery whose granted windows see no chunk land for this long (also the bound on a
  // delivery whose sender committed and left before its chunks landed), or that waits this
  // long for the commit once every chunk landed.
  std::chrono::milliseconds grant_unused_timeout{30000};
  // A delivery that holds no window and has waited this long for one is refused with
  // "no window available" (the sender's default stall timeout is 60 s: this comes first).
  std::chrono::milliseconds window_wait_timeout{20000};
  // Told when a connection or a delivery is ended by a limit or a timeout (one line each).
  std::function<void(const std::string&)> on_connection_event;
  // Retention. Empty data_dir: volatile only. Volatile deliveries are held in memory files
  // (memfd), or in unlinked files in scratch_dir when one is named. With data_dir,
  // process-restart and power-loss deliveries are kept there (docs/retention.md).
  std::string data_dir;
  std::string scratch_dir;
  // Empty: none. Else every delivery retained also appears as OUT_DIR/<name> (its id made a
  // safe file name, one-to-one; README, "writ serve --out"), written atomically and synced
  // as its retention class asks, with OUT_DIR/<name>.receipts.json beside it, before the
  // retained receipt goes out; an existing file with other bytes is a refusal.
  std::string out_dir;
  // Bytes all volatile deliveries may hold together; 0: half the host's memory when held in
  // memory, 64 GiB in a scratch directory.
  uint64_t volatile_capacity_bytes = 0;
  // Memory (in memory only, not with scratch_dir) kept touched and ready for volatile
  // deliveries, refilled in the background at idle priority, on top of the capacity: a
  // delivery that lands in it does not pay for the first touch of fresh memory.
  uint64_t volatile_reserve_bytes = 0;
  // When above volatile_reserve_bytes (in memory only): the reserve starts at that and
  // grows to the largest volatile delivery announced, up to this many bytes; extents of
  // abandoned deliveries are recycled into it, cleared. `writ serve`'s default.
  uint64_t volatile_reserve_limit_bytes = 0;
  // Which retained payloads the start-up recovery re-hashes: "all", "unsynced" (the
  // process-restart ones, which a power cut may have torn) or "none" (presence and size).
  std::string verify_on_start = "unsynced";
  // With data_dir: the background scrub's rate, bytes per second (re-hashes every retained
  // payload in turn and quarantines what fails); 0: no scrub.
  uint64_t scrub_bytes_per_second = 0;
  // Told what the data directory's recovery found (one line each) and about sync failures.
  std::function<void(const std::string&)> on_store_event;
  std::optional<ProcessingStep> processing;
  std::string receiver_id;  // names the issuer in receipts; default "writ-serve@HOST:PORT"
  // Where the Ed25519 identity that signs receipts lives (created on first start, 0600).
  // Empty: DATA_DIR/identity with --data, else $HOME/.local/state/writ/receiver.
  std::string identity_dir;
  // Allowed senders' public keys (hex, one a line). Empty: any sender is admitted.
  std::string allow_file;
};

// What Receiver::Shutdown did: deliveries that finished (retained) while it drained, and
// those refused and ended when the drain deadline passed.
struct ShutdownSummary {
  std::vector<std::string> drained;
  std::vector<std::string> aborted;
  bool deadline_passed = false;  // something was still in progress at the drain deadline
};

class WRIT_EXPORT Receiver {
 public:
  static Result<std::unique_ptr<Receiver>> Start(ReceiverOptions options);
  virtual ~Receiver() = default;

  // "127.0.0.1:7000": where senders connect (the control connection).
  virtual std::string listen_address() const = 0;
  virtual std::string provider() const = 0;
  // The key id and public key (hex) receipts are signed with.
  virtual std::string key_id() const = 0;
  virtual std::string public_key_hex() const = 0;
  // How many sender keys the allow list holds; 0 when anyone is admitted.
  virtual size_t allowed_senders() const = 0;
  // Stops accepting, ends every connection, closes the fabric. Idempotent.
  virtual Status Stop() = 0;
  // A bounded, clean stop: new connections and announces are refused ("shutting down"),
  // deliveries in progress get until `drain` to finish, the rest are refused and ended
  // (their uncommitted bytes discarded), then Stop(). Returns within `drain` plus a few
  // seconds, unless a processing step ignores DeliveryView::stop_requested. Idempotent.
  virtual Result<ShutdownSummary> Shutdown(std::chrono::milliseconds drain) = 0;
  // Region `k` of a retained delivery, from the store as held (not re-hashed: `writ store
  // check` verifies): a scatter-gather delivery's k-th region (Sender::SendRegions); a plain
  // delivery is one region, 0. kNotFound: not retained here, or no region k;
  // kInvalidArgument: the region is longer than `max_bytes` (it is returned in memory).
  virtual Result<std::vector<uint8_t>> ReadRegion(const std::string& id, uint64_t k,
                                                  uint64_t max_bytes = 64ull << 20) = 0;
};

}  // namespace writ
