// The sending end (`writ send`): moves one logical delivery as chunked RDMA
// writes into windows the receiver granted, and waits for exactly the rung and
// retention class the caller asked for.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "writ/receipt.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

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
  // Directory of the sender's Ed25519 identity (created on first use): signs the
  // announce (key, nonce, time) and the sender's own transport receipt. Empty: unsigned.
  std::string identity_dir;
  // Fault injection for tests: flip one byte of this chunk after the digest was announced.
  std::optional<uint64_t> corrupt_chunk;
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

struct DeliveryOutcome {
  DeliveryRef delivery;
  ReceiptContext context;  // the sender's: provider, device, completion level relied on
  std::vector<WorkCompletionRecord> work_completions;  // one per record, in arrival order
  std::vector<uint64_t> portion_request_ids;  // per chunk: the request that succeeded (or last tried)
  std::vector<Receipt> receipts;              // in rung order
  std::optional<ReceiptRung> reached_rung;    // highest rung with a receipt
  std::optional<RetentionClass> reached_retention;
  bool bytes_moved = true;  // false when the receiver already held the same content
  // Ok when the requested rung and retention were reached; otherwise names what failed
  // (kRefused, kTransport, kValidation, kRetention, ...) and the last rung reached.
  Status status;
};

DeliveryOutcome Send(const std::string& path, const SendOptions& options);

// cli.md's `--json` document for a finished send.
std::string OutcomeToJson(const DeliveryOutcome& outcome, const SendOptions& options);
// A writ.evidence/1 bundle of what the sender observed, with only claims its evidence supports.
std::string OutcomeToEvidenceBundle(const DeliveryOutcome& outcome);

}  // namespace writ
