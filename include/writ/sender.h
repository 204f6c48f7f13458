// The sending end (`writ send`): moves one logical delivery as chunked RDMA
// writes into windows the receiver granted, and waits for exactly the rung and
// retention class the caller asked for. `Sender` keeps one session (control
// connection, fabric connection, registered staging) for many deliveries, many of them
// in flight at once (`Submit`); `Send` is a one-shot session of one delivery.
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
#include "writ/receipt.h"
#include "writ/receipt_list.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

namespace sender {
struct TestSeams;  // src/sender/test_seams.h
}  // namespace sender

// Where the writes read the delivery's bytes from. A zero-copy file is also digested from
// its mapping: the first such delivery installs a process-wide SIGBUS handler (chained to the
// one it replaces) so that a file truncated during the send fails the delivery, not the
// process (docs/architecture.md, "Source path").
enum class SourcePath : uint8_t {
  // Zero-copy from kZeroCopyMinBytes up: for the caller's memory (SendBytes, regions)
  // always, for a file only where a NIC reads registered memory (verbs, efa, cxi); over
  // tcp and shm, which copy with the CPU either way, a file goes through staging.
  kAuto,
  kZeroCopy,  // the file mapping (or the caller's bytes) registered as the source
  kStaging,   // each chunk copied into registered staging buffers first
};
// Below this, copying a delivery into staging costs less than mapping and registering it.
inline constexpr uint64_t kZeroCopyMinBytes = 256 << 10;

// One piece of a scatter-gather delivery (like a NIXL descriptor): caller memory that must
// stay valid and unchanged until the send returns. A delivery of regions is their
// concatenation, in order: one digest, one receipt set, one object at the receiver, read
// back region by region (Receiver::ReadRegion, `writ store cat ID --region K`). A
// zero-length region is kept in the table (it reads back empty); at most 65,536 regions.
struct Region {
  const void* address = nullptr;
  uint64_t length = 0;
};

struct SendOptions {
  std::string to;        // the receiver's control address, "HOST:PORT"
  std::string provider;  // empty: the provider the receiver serves
  std::string id;        // delivery id; empty: the file's name
  uint64_t chunk_size = 8ull << 20;
  Rule rule = Rule::kXxh3_128;
  Rung until = Rung::kValidated;
  // The retention class to wait for. When absent: volatile, awaited only for
  // rungs from `validated` up.
  std::optional<RetentionClass> retention;
  CompletionLevel level = CompletionLevel::kDelivery;
  uint32_t depth = 4;         // chunk writes in flight (staging buffers of chunk_size each)
  uint32_t max_attempts = 1;  // per chunk; each attempt is its own work request
  // Without any progress (completion, grant, receipt) for this long: transport failure.
  std::chrono::milliseconds stall_timeout{60000};
  std::function<void(uint64_t bytes_done, uint64_t bytes_total)> progress;
  // Called on the session's thread as each receipt arrives (after the last chunk: the
  // receiver's phases, e.g. for a progress display).
  std::function<void(ReceiptRung rung)> on_receipt;
  // Directory of the sender's Ed25519 identity (created on first use): signs the
  // announce (key, nonce, time) and the sender's own transport receipt, and holds the
  // digest cache (DIR/digest-cache). Empty: unsigned, no cache.
  std::string identity_dir;
  SourcePath source = SourcePath::kAuto;
  // The delivery's digest under `rule`, when the caller knows it: announced, and the
  // source is not digested again. Empty: from the digest cache, else computed as the
  // chunks are written and sent with the commit.
  std::vector<uint8_t> digest;
  bool busy_poll = false;  // as SessionOptions::busy_poll
  bool ring = true;        // as SessionOptions::ring
  // As DeliveryOptions::target, target_offset and target_pages: into the receiver
  // application's exposed buffer (an embedded writ::Receiver; `writ serve` exposes none).
  std::string target;
  uint64_t target_offset = 0;
  std::vector<uint64_t> target_pages;
};

// One completion record as the sender read it. On an error record only
// request id, status, endpoint and provider error exist.
struct WorkCompletionRecord {
  uint64_t request_id = 0;
  uint64_t chunk = 0;
  uint32_t attempt = 1;
  bool ok = false;
  std::string status;  // "success" or the fabric error's name
  uint32_t endpoint = 0;
  std::optional<int> provider_errno;  // error records only
  std::string provider_error;         // error records only
};

// What a session keeps for all its deliveries.
struct SessionOptions {
  std::string to;        // the receiver's control address, "HOST:PORT"
  std::string provider;  // empty: the provider the receiver serves
  uint32_t depth = 4;    // chunk writes in flight (staging buffers of one chunk each)
  // Deliveries in flight at once (announced, not yet ended by the receiver); also bounded
  // by the receiver's hello (`max_in_flight`). Further submissions wait their turn.
  uint32_t max_in_flight = 16;
  std::chrono::milliseconds connect_timeout{10000};
  // Directory of the sender's Ed25519 identity (created on first use): signs every
  // announce (key, nonce, time) and the sender's own transport receipts, and holds the
  // digest cache of files sent (DIR/digest-cache). Empty: unsigned, no cache.
  std::string identity_dir;
  // `--poll busy`: wait for completions and the receiver by polling in a loop (yielding
  // the core between polls) instead of sleeping on wait objects: lower latency for a
  // busy core (docs/cli.md). Default: blocking.
  bool busy_poll = false;
  // Standing windows (docs/protocol.md): once the receiver grants a ring, a delivery that
  // fits one of its slots is written at once, announced and committed in one message, with
  // no announce/grant round trip. False: every delivery takes the announce path.
  bool ring = true;
};

// What each delivery of a session chooses for itself.
struct DeliveryOptions {
  std::string id;  // delivery id; empty: the file's name (required for SendBytes)
  uint64_t chunk_size = 8ull << 20;
  Rule rule = Rule::kXxh3_128;
  Rung until = Rung::kValidated;
  // The retention class to wait for. When absent: volatile, awaited only for rungs from
  // `validated` up.
  std::optional<RetentionClass> retention;
  CompletionLevel level = CompletionLevel::kDelivery;
  uint32_t max_attempts = 1;  // per chunk; each attempt is its own work request
  // Without any progress (completion, grant, receipt) for this long: transport failure.
  std::chrono::milliseconds stall_timeout{60000};
  // Called on the session's thread as chunks complete.
  std::function<void(uint64_t bytes_done, uint64_t bytes_total)> progress;
  // As SendOptions::on_receipt.
  std::function<void(ReceiptRung rung)> on_receipt;
  SourcePath source = SourcePath::kAuto;
  // As SendOptions::digest: known to the caller, announced and not computed again.
  std::vector<uint8_t> digest;
  // An addressed delivery: written straight into the receiver application's exposed buffer
  // `target` (Receiver::Expose) at byte `target_offset`, validated there; its retained
  // receipt is volatile, in the application's buffer. Empty: into the receiver's store.
  std::string target;
  uint64_t target_offset = 0;
  // A page-list delivery into a paged target (ExposeOptions::pages): delivery byte
  // i * page_size .. lands in page target_pages[i]; the delivery's size must be
  // target_pages.size() x the target's page size, the list must not repeat a page, and
  // target_offset must be 0. The chunk size is lowered to the page size when larger (a
  // chunk must land within one page). Empty: at target_offset.
  std::vector<uint64_t> target_pages;
};

struct DeliveryOutcome {
  DeliveryRef delivery;
  ReceiptContext context;  // the sender's: provider, device, completion level relied on
  std::vector<WorkCompletionRecord> work_completions;  // one per record, in arrival order
  // Per chunk: the request that succeeded (or was last tried).
  std::vector<uint64_t> portion_request_ids;
  ReceiptList receipts;                     // in rung order, retained last
  std::optional<ReceiptRung> reached_rung;  // highest rung with a receipt
  std::optional<RetentionClass> reached_retention;
  // True when this send wrote bytes to the receiver: false when the receiver already held
  // the same content, and on a failure before any chunk write completed.
  bool bytes_moved = false;
  // Written into a slot of the receiver's standing window (ring): announced and committed in
  // one `deliver` message, without an announce/grant round trip.
  bool ring = false;
  // Where the digest came from: "given" (the caller's), "cached" (an unchanged file sent
  // before; both announced), or "computed" (while the chunks were written; in the commit).
  std::string digest_source;
  // "zero-copy" or "staging"; `source_note` says why staging when zero-copy was possible.
  std::string source_path;
  std::string source_note;
  // Ok when the requested rung and retention were reached; otherwise names what failed
  // (kRefused, kTransport, kValidation, kRetention, ...) and the last rung reached.
  Status status;
};

// A submitted delivery: its outcome once the session has finished it. Copies share it.
class WRIT_EXPORT DeliveryHandle {
 public:
  class State;
  DeliveryHandle() = default;
  explicit DeliveryHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}

  bool valid() const { return state_ != nullptr; }
  // Whether the outcome is there (Wait would not block).
  bool Ready() const;
  // Blocks until the delivery has finished; the same outcome on every call.
  const DeliveryOutcome& Wait() const;
  // Calls `fn` once, when the outcome is there: at once, on this thread, if it already is
  // (or the handle is not valid); otherwise on the session's thread as the delivery ends,
  // so `fn` should only hand the news on (it holds up every delivery in flight) and must
  // not call into the Sender (or on the session's watch thread, when it abandons the
  // session: below). A later call replaces a function not yet called.
  void OnDone(std::function<void()> fn) const;

 private:
  std::shared_ptr<State> state_;
};

// A persistent sender session: one control connection, one fabric connection and the
// registered staging, shared by every delivery. `Submit` is safe from any thread and
// returns at once; the session's own thread drives every delivery in flight (up to
// `SessionOptions::max_in_flight`, chunk writes up to `depth` over all of them), routing
// control messages by delivery id and completions by request id. Deliveries of the same
// id are announced one after the other.
// A delivery that fails leaves the session usable when the failure was the delivery's
// own (a refusal, failed validation, a local file error) and the connection is known to
// be clean; the others go on. Otherwise (control connection lost, an error completion, a
// stall, a protocol violation) the session is broken: every delivery in flight or
// waiting fails with that status, usable() is false and every later submission fails
// with `health()` at once without touching the network.
// A turn of the session's thread that lasts longer than the longest stall timeout of its
// deliveries (a provider call that never returns: libfabric 1.17's shm provider spins for
// ever on a lock held by a peer killed while holding it) abandons the session the same way,
// from a watch thread: each handle gets a transport error without its records, and the
// memory of a SubmitBytes/SubmitRegions delivery may still be read by the stuck call, so
// keep it. The destructor then leaves the stuck thread and what it uses allocated.
class WRIT_EXPORT Sender {
 public:
  // Connects and exchanges the hello; opens the fabric node and connects it.
  static Result<std::unique_ptr<Sender>> Connect(const SessionOptions& options);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Opens `path` ("-": standard input) on the calling thread and queues its delivery.
  DeliveryHandle Submit(const std::string& path, const DeliveryOptions& options);
  // `bytes` must stay valid until the handle is ready; `options.id` is required.
  DeliveryHandle SubmitBytes(std::span<const uint8_t> bytes, const DeliveryOptions& options);
  // Submit and Wait.
  DeliveryOutcome Send(const std::string& path, const DeliveryOptions& options);
  DeliveryOutcome SendBytes(std::span<const uint8_t> bytes, const DeliveryOptions& options);
  // A scatter-gather delivery; `options.id` is required. Regions of at least
  // kZeroCopyMinBytes are registered and written from where they lie, the rest gathered
  // into the registered staging chunk by chunk (SourcePath::kStaging: all of them); the
  // digest is computed in the same pass. The regions must stay valid until the handle is
  // ready (SubmitRegions) or the call returns (SendRegions).
  DeliveryHandle SubmitRegions(std::span<const Region> regions, const DeliveryOptions& options);
  DeliveryOutcome SendRegions(std::span<const Region> regions, const DeliveryOptions& options);

  bool usable() const;
  // Ok while usable; otherwise why the session is broken.
  Status health() const;
  const std::string& provider() const;  // the provider the receiver serves
  uint64_t deliveries() const;          // deliveries submitted on this session
  // Deliveries this session keeps in flight at once: the smaller of max_in_flight and the
  // receiver's hello.
  uint32_t max_in_flight() const;

  // Fails every delivery still in flight or waiting, stops the session's thread and
  // closes the fabric node and the control connection. Later submissions fail.
  Status Close();

  class Impl;

 private:
  friend struct sender::TestSeams;
  explicit Sender(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One delivery on a session of its own: connect, send, close.
WRIT_EXPORT DeliveryOutcome Send(const std::string& path, const SendOptions& options);
// The same for a scatter-gather delivery (`options.id` required).
WRIT_EXPORT DeliveryOutcome SendRegions(std::span<const Region> regions,
                                        const SendOptions& options);

WRIT_EXPORT SessionOptions SessionOptionsOf(const SendOptions& options);
WRIT_EXPORT DeliveryOptions DeliveryOptionsOf(const SendOptions& options);

// cli.md's `--json` document for a finished send.
WRIT_EXPORT std::string OutcomeToJson(const DeliveryOutcome& outcome, const SendOptions& options);
WRIT_EXPORT std::string OutcomeToJson(const DeliveryOutcome& outcome,
                                      const DeliveryOptions& options);
// The same document on one line, for a program to parse rather than a person to read: the
// receipts are written as they were signed, not rebuilt, so it costs a fraction of the
// indented form.
WRIT_EXPORT std::string OutcomeToCompactJson(const DeliveryOutcome& outcome,
                                             const DeliveryOptions& options);
// A writ.evidence/1 bundle of what the sender observed, with only claims its evidence supports.
WRIT_EXPORT std::string OutcomeToEvidenceBundle(const DeliveryOutcome& outcome);

}  // namespace writ
