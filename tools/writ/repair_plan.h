// What `writ repair` does for one delivery, shared by the command (on a holder's host, or
// from anywhere through a holder's serve) and by the serve's repair agent: ask every live
// member what it holds, count copies as `writ query --cluster` does, and send the copy in
// a local data directory to the next placed members that lack one.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "cluster/replicated_send.h"
#include "writ/receipt.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ::cli {

struct RepairRequest {
  std::string id;
  uint32_t k = 2;
  RetentionClass replica = RetentionClass::kPowerLoss;
  std::string identity;  // signs the queries; empty: unsigned
};

struct RepairPlan {
  std::vector<Receipt> held;                   // counted copies: distinct keys and domains
  std::vector<cluster::Member> holders;        // the members whose copies are counted
  std::vector<cluster::ReplicaTarget> others;  // members without a counted copy, in order
};

// Asks every member (placement order of the id) and prints one line per member to `out`.
RepairPlan PlanRepair(const RepairRequest& request, std::vector<cluster::Member> members,
                      std::ostream& out);

// The certificate from K counted copies; Retention naming what was reached with fewer.
Result<receipt::ReplicatedCertificate> CertificateOf(const RepairRequest& request, RepairPlan plan);

// Restores K copies of `request.id` from the copy held in `data_dir` (opened read-only; its
// serve may be running): the certificate once K copies are counted. Lines to `out`.
Result<receipt::ReplicatedCertificate> RepairFromDataDir(const RepairRequest& request,
                                                         const std::string& data_dir,
                                                         const cluster::EtcdClient& etcd,
                                                         std::ostream& out);

}  // namespace writ::cli
