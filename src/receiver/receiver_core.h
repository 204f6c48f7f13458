// What every connection of one receiver shares.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/mutex.h"
#include "fabric/fabric_port.h"
#include "fabric/progress_loop.h"
#include "receipt/identity.h"
#include "receiver/delivery_log.h"
#include "receiver/digest_pool.h"
#include "receiver/exposed_targets.h"
#include "receiver/metrics.h"
#include "receiver/notification_router.h"
#include "receiver/receipt_signer.h"
#include "receiver/reservation.h"
#include "receiver/sender_auth.h"
#include "receiver/shutdown_state.h"
#include "receiver/window_pool.h"
#include "store/store.h"
#include "writ/receipt.h"
#include "writ/receiver.h"

namespace writ::receiver {

// Whether the fabric still makes progress (Receiver::health): ok until the progress loop
// reports a failed poll or a call that does not return; the first report is kept.
class FabricHealth {
 public:
  void Fail(const Status& why) {
    MutexLock lock(mu_);
    if (status_.ok()) status_ = why;
    failed_.store(true, std::memory_order_release);
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  Status status() const {
    MutexLock lock(mu_);
    return status_;
  }

 private:
  std::atomic<bool> failed_{false};  // read on every announce without the lock
  mutable Mutex mu_;
  Status status_ GUARDED_BY(mu_);
};

struct ReceiverCore {
  ReceiverOptions options;
  std::string issuer;          // "writ serve 127.0.0.1:7000"
  std::string failure_domain;  // ReceiverOptions::failure_domain; empty: none
  // What signed announces, commits and queries are bound to (the hello's receiver_id):
  // "<issuer>#<public key hex>", so that a request signed for one receiver is refused by
  // every other, whatever its address or --receiver-id (docs/protocol.md).
  std::string signing_id;
  std::unique_ptr<fabric::FabricPort> node;
  fabric::ProgressLoop* progress = nullptr;  // polls `node`; set before any connection runs
  FabricHealth fabric;                       // what `progress` reported
  std::unique_ptr<WindowPool> pool;
  // After `pool`, so destroyed before it: digests every delivery (ReceiverOptions::digest_threads).
  std::unique_ptr<DigestPool> digests;
  NotificationRouter router;
  // The provider names no writer of a remote write (ProviderInfo::writes_need_attestation):
  // a chunk counts only with its sender's `written` too. Set with `node`.
  bool writes_attested = false;
  std::unique_ptr<store::Store> store;
  ReceiptContext context;                      // for receipts this receiver issues
  std::vector<uint8_t> fabric_address;         // sent in Hello
  std::optional<receipt::Identity> identity;   // signs every receipt
  std::unique_ptr<ReceiptSigner> signer;       // with `identity`, for every connection
  SenderAuth auth;                             // --allow
  std::vector<receipt::PublicKey> admin_keys;  // --admin-key: may remove any delivery
  ShutdownState shutdown;                      // Receiver::Shutdown: admission, drain, abort
  Metrics metrics;                             // counted by connections, rendered on a scrape
  RetainedSummary retained_summary;            // the "deliveries" log line (delivery_log.h)
  ExposedTargets targets;                      // Receiver::Expose: addressed deliveries' memory

  // A delivery id may be in progress on one connection at a time.
  bool ClaimId(const std::string& id) {
    MutexLock lock(ids_mu);
    return active_ids.insert(id).second;
  }
  void ReleaseId(const std::string& id) {
    MutexLock lock(ids_mu);
    active_ids.erase(id);
  }

  // Per-sender usage against the configured limits.
  using Usage = SenderUsage;
  uint32_t LimitOf(Usage what) const {
    switch (what) {
      case Usage::kDeliveries: return options.max_deliveries_per_sender;
      case Usage::kWindows: return options.max_windows_per_sender;
      case Usage::kConnections: return options.max_connections_per_sender;
    }
    return 0;
  }
  bool Reserve(const std::string& sender, Usage what) {
    MutexLock lock(ids_mu);
    uint32_t& count = usage[sender][static_cast<size_t>(what)];
    if (count >= LimitOf(what)) {
      if (usage[sender] == std::array<uint32_t, 3>{}) usage.erase(sender);
      return false;
    }
    ++count;
    return true;
  }
  void Unreserve(const std::string& sender, Usage what) {
    MutexLock lock(ids_mu);
    auto it = usage.find(sender);
    if (it == usage.end()) return;
    uint32_t& count = it->second[static_cast<size_t>(what)];
    if (count > 0) --count;
    if (it->second == std::array<uint32_t, 3>{}) usage.erase(it);
  }

  // Read-only views, for tests and logs.
  bool IdActive(const std::string& id) const {
    MutexLock lock(ids_mu);
    return active_ids.count(id) > 0;
  }
  size_t ActiveIds() const {
    MutexLock lock(ids_mu);
    return active_ids.size();
  }
  // Whether `sender` holds anything, and how much of `what`.
  bool HoldsAny(const std::string& sender) const {
    MutexLock lock(ids_mu);
    return usage.count(sender) > 0;
  }
  uint32_t UsageOf(const std::string& sender, Usage what) const {
    MutexLock lock(ids_mu);
    auto it = usage.find(sender);
    return it == usage.end() ? 0 : it->second[static_cast<size_t>(what)];
  }
  size_t SendersHolding() const {
    MutexLock lock(ids_mu);
    return usage.size();
  }

  std::atomic<int> connections_running{0};        // Connection::Run, between hello and end
  std::atomic<uint64_t> next_delivery_serial{1};  // InboundDelivery::serial
  std::atomic<uint64_t> ring_bytes{0};  // every connection's ring (standing_ring.h), together

 private:
  mutable Mutex ids_mu;
  std::set<std::string> active_ids GUARDED_BY(ids_mu);
  // sender -> count per Usage
  std::map<std::string, std::array<uint32_t, 3>> usage GUARDED_BY(ids_mu);
};

}  // namespace writ::receiver
