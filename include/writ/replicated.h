// writ::SendReplicated: replicated:K from a program, as `writ send --retention replicated:K`
// does it. One delivery written to K receivers in parallel (the file read and digested
// once), each copy retained in the replica class; a replica that fails, refuses or stalls
// is replaced by the next receiver in placement order. It succeeds only with K retained
// receipts from K distinct keys in K distinct signed failure domains, and then returns the
// replicated:K certificate (docs/retention.md, "replicated:K").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "writ/export.h"
#include "writ/sender.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

struct ReplicatedSendOptions {
  // Everything but `to`, `until` and `retention`, which are set per replica (each replica
  // is sent until `retained` in `replica_retention`); `stall_timeout` is per replica.
  SendOptions base;
  uint32_t k = 2;
  RetentionClass replica_retention = RetentionClass::kPowerLoss;
  // Exactly one of: the etcd endpoint whose live members offering `replica_retention` are
  // placed by the delivery id (at most one copy per failure domain counted), or a static
  // set of receiver addresses ("HOST:PORT"), tried in the order given.
  std::string cluster;
  std::vector<std::string> receivers;
};

struct ReplicaReport {
  std::string address;
  bool counted = false;
  std::string why_not;  // when not counted: what was wrong
  DeliveryOutcome outcome;
};

struct ReplicatedDelivery {
  std::vector<ReplicaReport> replicas;  // every receiver tried, in the order they finished
  // The replicated:K receipt as JSON (what `writ verify` checks); empty without K counted.
  std::string certificate_json;
  // Ok with K counted. Otherwise: kInvalidArgument (bad options, no file), kTransport (etcd
  // unreachable or malformed), kRetention naming what was reached.
  Status status;
};

WRIT_EXPORT ReplicatedDelivery SendReplicated(const std::string& path,
                                              const ReplicatedSendOptions& options);

// One writ.evidence/1 bundle of a replicated send (docs/audit.md, "Replicated deliveries"):
// the delivery once, every replica's work completions (wr_id "replica-N/ID"), the counted
// replicas' portions and notifications, every replica's acknowledgements and retention
// promise, and with K counted the replicated:K promise and its claims; every replica's
// receipts under "receipts", each replica's address, verdict and receipts under
// "replicas", and the certificate under "certificate", which `writ audit` judges.
WRIT_EXPORT std::string ReplicatedEvidenceBundle(const ReplicatedDelivery& delivery);

}  // namespace writ
