// replicated:K: one delivery written to K receivers in parallel, each copy retained in
// the replica class, a failed, refusing or stalled replica replaced by the next receiver
// in placement order; counted only as K retained receipts from K distinct keys in K
// distinct signed failure domains (receipt/certificate.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "receipt/certificate.h"
#include "writ/sender.h"

namespace writ::cluster {

// One receiver to try. From etcd, the key and domain it registered (its receipt must
// match them); from --to, empty: taken from its receipt.
struct ReplicaTarget {
  std::string address;
  std::string public_key;
  std::string domain;
};

struct ReplicatedSendOptions {
  SendOptions base;  // everything but `to`, `until` and `retention`, set per replica
  uint32_t k = 2;
  RetentionClass replica_retention = RetentionClass::kPowerLoss;
  std::vector<ReplicaTarget> order;  // placement order, best first
  // Copies already held (repair): verified retained receipts, counted first; `order`
  // should not name their receivers.
  std::vector<Receipt> existing;
};

struct ReplicaResult {
  ReplicaTarget target;
  DeliveryOutcome outcome;
  bool counted = false;
  std::string why_not;  // when not counted: what was wrong
};

struct ReplicatedOutcome {
  std::vector<ReplicaResult> replicas;  // every receiver tried, in the order they finished
  std::optional<receipt::ReplicatedCertificate> certificate;  // only with K counted
  Status status;  // Ok with K; Retention naming what was reached otherwise
};

// Digests the file once (unless base.digest is given), then sends.
ReplicatedOutcome SendReplicated(const std::string& path, const ReplicatedSendOptions& options);

}  // namespace writ::cluster
