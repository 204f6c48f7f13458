// The receiving end (`writ serve`): grants windows, observes every chunk's
// notification, validates whole deliveries, optionally processes them, retains
// them and issues a receipt for each rung it really reached.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
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
  std::string rule;  // the digest's rule: "xxh3-128", "sha256", ...
};

// A named application step run on every validated delivery that asks for it (announced
// `until processed`); deliveries that ask for less are not processed. Its success is the
// `processed` rung, whose receipt names the step; its failure refuses the delivery.
struct ProcessingStep {
  std::string name;
  std::function<Status(const DeliveryView&)> run;
  // How the processed receipt states the success; empty: "returned success". (Initialized
  // here so that ProcessingStep{name, run} draws no missing-field-initializers warning.)
  std::string success_statement = "";
};

// One line of a receiver's log (ReceiverOptions::on_event): what happened, for a person
// (`message`) and for a program (`event` and `fields`).
struct LogField {
  std::string name;
  std::variant<std::string, uint64_t, double> value;
};
struct LogEvent {
  // kDebug: a line per delivery that ended as it should (`writ serve --verbose`); kInfo
  // summarises them (one "deliveries" line per second at most).
  enum class Level : uint8_t { kInfo, kWarning, kError, kDebug };
  Level level = Level::kInfo;
  // "delivery" (an outcome), "deliveries" (the retained ones counted), "refusal", "recovery" (a
  // start-up step), "store" (scrub, quarantine, sync failure), "connection" (a limit or timeout
  // that hit), "shutdown", "fabric" (its progress stopped: Receiver::health).
  std::string event;
  std::string message;  // one line, without the "writ: " the CLI puts in front
  std::vector<LogField> fields;
};

// A processing step that runs a command (`writ serve --exec`; docs/cli.md): for each
// delivery, `/bin/sh -c COMMAND` in a process group of its own, the delivery's bytes on its
// standard input, WRIT_DELIVERY_ID, WRIT_BYTES, WRIT_RULE and WRIT_DIGEST (hex) in its
// environment. Exit status 0 is success; another status, a signal, or running past
// `timeout` (the whole group is then killed) refuses the delivery, naming which.
struct ExecStepOptions {
  std::string command;
  std::chrono::milliseconds timeout{60000};
  uint32_t concurrency = 2;  // commands running at once, over all connections (at least 1)
  // Told the command's output (standard output and error, the last 4 KiB), one line at a
  // time, each prefixed "exec DELIVERY-ID: ".
  std::function<void(const std::string&)> on_output;
};
WRIT_EXPORT ProcessingStep ExecStep(ExecStepOptions options);

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
  // `--poll busy`: the fabric progress thread polls the completion queues in a loop
  // (yielding between polls) instead of sleeping on their wait objects: lower latency for
  // a core kept busy even when idle (docs/cli.md). Default: blocking.
  bool busy_poll = false;
  uint32_t max_connections = 64;
  // Standing windows (docs/protocol.md, "Standing windows"): a connection that has had a
  // delivery admitted is granted one ring of `ring_slots` slots of `ring_slot_size` bytes,
  // which its sender writes small deliveries into without an announce/grant round trip.
  // Registered once per connection; all rings together hold at most window_pool_bytes
  // (docs/security.md). 0 slots: no rings.
  uint32_t ring_slots = 64;
  uint64_t ring_slot_size = 64ull << 10;
  // Limits, each enforced with a named refusal. A "sender" is its announce key when
  // senders authenticate (--allow), else its host.
  uint32_t max_message_bytes = 1 << 20;      // one control frame (an announce included)
  uint64_t max_delivery_bytes = 1ull << 40;  // one delivery
  uint32_t max_deliveries_per_sender = 16;   // in progress at once
  uint32_t max_windows_per_sender = 16;      // granted at once, over all its deliveries
  // In progress at once on one connection; the hello advertises the smaller of this and
  // max_deliveries_per_sender as `max_in_flight`, and an announce past it is refused.
  uint32_t max_deliveries_per_connection = 64;
  // Connections from one address (IP, whatever the port) at once. When all max_connections
  // are taken, a new connection takes the place of the one idle longest (connected with no
  // delivery in progress), so idle connections cannot lock a sender out.
  uint32_t max_connections_per_address = 16;
  // Connections one authenticated sender (its key) may hold at once, counted from its
  // first signed announce on each.
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
  // Bytes all volatile deliveries may hold together, their receipt texts included; 0: half
  // the host's memory when held in memory, 64 GiB in a scratch directory.
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
  // Time-to-live per retention class (docs/retention.md, "Lifecycle"): a delivery retained
  // at a class that has one is promised for at least that long after its commit (its
  // retained receipt names the time) and removed by a background sweep once that time has
  // passed (durable ones also at start). A class without one: held until removed.
  std::map<RetentionClass, std::chrono::milliseconds> ttl;
  // With data_dir: the background scrub's rate, bytes per second (re-hashes every retained
  // payload in turn and quarantines what fails); 0: no scrub.
  uint64_t scrub_bytes_per_second = 0;
  // Told what the data directory's recovery found (one line each) and about sync failures.
  std::function<void(const std::string&)> on_store_event;
  // Told every log event, structured: each delivery's outcome, each refusal, each recovery
  // step, and the on_store_event / on_connection_event lines too (as "store" and
  // "connection" warnings). Called from any of the receiver's threads, concurrently.
  std::function<void(const LogEvent&)> on_event;
  // Also a debug "delivery" event for each delivery that ended retained (otherwise counted
  // in an info "deliveries" event, at most one a second): off keeps the log cheap at
  // thousands of deliveries a second.
  bool log_each_delivery = false;
  // "HOST:PORT": serve Prometheus metrics over HTTP at GET /metrics (port 0: pick one; see
  // Receiver::metrics_address). Empty: none (Receiver::MetricsText still has them).
  std::string metrics_listen;
  std::optional<ProcessingStep> processing;
  std::string receiver_id;  // names the issuer in receipts; default "writ-serve@HOST:PORT"
  // This receiver's failure domain (rack, host, zone): signed into every receipt it issues
  // (Receipt::failure_domain), so that a replicated:K certificate can count distinct ones.
  // Empty: none.
  std::string failure_domain;
  // Where the Ed25519 identity that signs receipts lives (created on first start, 0600).
  // Empty: DATA_DIR/identity with --data, else $HOME/.local/state/writ/receiver.
  std::string identity_dir;
  // Allowed senders' public keys (hex, one a line). Empty: any sender is admitted.
  std::string allow_file;
  // Operator keys (hex public keys, `serve --admin-key`): a signed removal (`writ rm`) from
  // one of them may remove any delivery; otherwise only the key that delivered it may.
  std::vector<std::string> admin_keys;
};

// What Receiver::Shutdown did: deliveries that finished (retained) while it drained, and
// those refused and ended when the drain deadline passed.
struct ShutdownSummary {
  std::vector<std::string> drained;
  std::vector<std::string> aborted;
  bool deadline_passed = false;  // something was still in progress at the drain deadline
  // Over the receiver's life: receipts signed, and the Ed25519 signatures that took (fewer
  // when receipts ready together were group-signed).
  uint64_t receipts_signed = 0;
  uint64_t signatures = 0;
};

// What Receiver::Remove took out of the store.
struct RemovedDelivery {
  std::string id;
  RetentionClass retention = RetentionClass::kVolatile;
  uint64_t bytes = 0;
  std::string held_until;       // RFC 3339: the time its receipt promised; empty: none promised
  bool promise_broken = false;  // forced before that time
};

// A retained delivery as the receiver's store holds it (Receiver::Held).
struct StoredDelivery {
  std::string id;
  uint64_t bytes = 0;
  RetentionClass retention = RetentionClass::kVolatile;
  std::string rule;        // the digest's rule: "xxh3-128", "sha256", ...
  std::string digest_hex;  // the delivery's digest under `rule`
  // A scatter-gather delivery's region lengths, in order (Sender::SendRegions); empty: a
  // plain delivery, one region.
  std::vector<uint64_t> region_lengths;
  std::vector<std::string> receipts;  // receipt JSON, in rung order, retained last
  std::string held_until;             // RFC 3339: the time its receipt promised; empty: none
};

// Bytes of a retained delivery read in place, in the receiver's own memory, with no copy
// (Receiver::View). `bytes` stays valid and unchanged while `keep`, or a copy of it, lives:
// a removal meanwhile, or the receiver stopping, leaves them until the last copy is dropped.
struct HeldBytes {
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> keep;
};

// Exposed targets (docs/architecture.md, "Exposed targets"): memory the application owns,
// under a name, that senders deliver into at an offset or, for a paged target, into a list
// of its pages (DeliveryOptions::target, target_offset, target_pages). Each
// delivery is written in place, digested where it landed, and signed; the memory stays the
// application's.
enum class TargetMemory : uint8_t { kHost };  // CUDA device memory: not built yet

// Optional geometry of a paged target (a KV cache): page_size * page_count bytes at most
// the buffer's; page k is bytes [k * page_size, (k + 1) * page_size). A paged target takes
// page-list deliveries as well as deliveries at a byte offset.
struct PageGeometry {
  uint64_t page_size = 0;
  uint64_t page_count = 0;
};

// What the application is told once a delivery into one of its targets has ended: `ok`
// after its bytes were validated in place (never before), else its bytes (the range
// [offset, offset + bytes), or the pages listed) may hold unvalidated bytes and must not be
// used (`why` says why).
struct TargetDelivery {
  std::string target;
  std::string delivery_id;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool ok = false;
  std::string why;  // empty when ok
  // A page-list delivery's pages, in delivery order (then `offset` is 0 and `bytes` is
  // pages.size() * page_size); empty for a delivery at an offset.
  std::vector<uint64_t> pages = {};
};

struct ExposeOptions {
  std::optional<PageGeometry> pages;
  TargetMemory memory = TargetMemory::kHost;
  // Called on a connection's thread, once per admitted delivery into the target, after its
  // validation (ok) or after it ended otherwise (not ok) and no write of it can land any
  // more. It must not call Revoke.
  std::function<void(const TargetDelivery&)> on_delivery;
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
  // Removes a retained delivery (any class): kNotFound naming the id when none is held;
  // kRefused while its retained receipt still promises it (a time-to-live not yet passed)
  // unless `force`. Durable removals are synced before this returns. Each removal is told
  // to on_store_event as one line (id, class, bytes, why, a broken promise).
  virtual Result<RemovedDelivery> Remove(const std::string& id, bool force) = 0;
  // Where GET /metrics answers ("127.0.0.1:9464"); empty without metrics_listen.
  virtual std::string metrics_address() const = 0;
  // The receiver's metrics in the Prometheus text exposition format 0.0.4.
  virtual std::string MetricsText() const = 0;
  // Ok while the fabric makes progress. Otherwise why it stopped: polling the fabric failed,
  // or a progress call has not returned for a long time (libfabric 1.17's shm provider
  // spins for ever on a lock a killed peer held). The receiver then completes no write any
  // more: it refuses every new announce naming this, and every delivery still waiting for
  // chunks (those whose chunks all landed go on), says it once to on_event (an error,
  // "fabric"), and should be restarted (`writ serve` exits 4; what it retained survives as
  // its retention class promises).
  virtual Status health() const = 0;
  // Stops accepting, ends every connection, closes the fabric. Idempotent. When the
  // progress thread is stuck inside the provider it is left there, the fabric it is in
  // (with this receiver's window memory) is left allocated rather than freed under it, and
  // Stop returns health().
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
  // What the store holds for `id` (its receipts included); kNotFound when not retained here.
  virtual Result<StoredDelivery> Held(const std::string& id) = 0;
  // `out.size()` bytes of a retained delivery from `offset`, into the caller's memory with no
  // buffer in between (not re-hashed). kNotFound: not retained here; kInvalidArgument: the
  // range passes its end.
  virtual Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) = 0;
  // `length` bytes of a retained delivery from `offset`, in place in the receiver's memory,
  // with no copy (HeldBytes). Possible where the range lies in one piece of memory: a
  // volatile delivery held in the memory arena (not with a scratch directory), within one
  // extent or in extents placed side by side. kUnsupported, naming why, otherwise (a
  // process-restart or power-loss delivery is in a file: Read copies it); kNotFound: not
  // retained here; kInvalidArgument: the range passes its end. The arena is not inherited
  // by a child the process forks (MADV_DONTFORK): a view is for this process only.
  virtual Result<HeldBytes> View(const std::string& id, uint64_t offset, uint64_t length) = 0;
  // Exposes `buffer` (which must stay valid until Revoke returns, or the receiver stops)
  // under `name`: senders may then deliver into it at an offset. kInvalidArgument: an empty
  // name or buffer, a name exposed already, geometry larger than the buffer.
  virtual Status Expose(const std::string& name, std::span<uint8_t> buffer,
                        ExposeOptions options = {}) = 0;
  // Withdraws `name`: new deliveries into it are refused, those in flight are refused ("the
  // target was revoked"), and this returns once none of their windows is registered any
  // more, so no write into the buffer can land after. kNotFound: not exposed.
  virtual Status Revoke(const std::string& name) = 0;
};

}  // namespace writ
