// writ::SendReplicated (include/writ/replicated.h): the library's face of the replicated
// send that `writ send --retention replicated:K` runs.
#include "cluster/placed_targets.h"
#include "cluster/replicated_send.h"
#include "writ/replicated.h"
#include "writ/vocabulary.h"

namespace writ {
namespace {

Status CheckOptions(const ReplicatedSendOptions& o) {
  if (o.cluster.empty() == o.receivers.empty())
    return Status::InvalidArgument("replicated:K needs exactly one of a cluster or receivers");
  if (o.k == 0) return Status::InvalidArgument("replicated:K needs K of at least 1");
  if (o.replica_retention == RetentionClass::kVolatile)
    return Status::InvalidArgument("a replica's retention must survive its receiver: not volatile");
  return Status::Ok();
}

Result<std::vector<cluster::ReplicaTarget>> TargetsOf(const std::string& path,
                                                      const ReplicatedSendOptions& o) {
  std::vector<cluster::ReplicaTarget> out;
  if (!o.receivers.empty()) {
    for (const std::string& address : o.receivers) out.push_back({address, "", ""});
    return out;
  }
  auto placed = cluster::PlacedTargets(o.cluster, cluster::DeliveryIdOfFile(path, o.base.id),
                                       std::string(RetentionName(o.replica_retention)));
  if (!placed.ok()) return placed.status().Annotate("cluster " + o.cluster);
  return placed;
}

}  // namespace

ReplicatedDelivery SendReplicated(const std::string& path, const ReplicatedSendOptions& options) {
  ReplicatedDelivery result;
  if (Status checked = CheckOptions(options); !checked.ok()) {
    result.status = checked;
    return result;
  }
  auto targets = TargetsOf(path, options);
  if (!targets.ok()) {
    result.status = targets.status();
    return result;
  }
  cluster::ReplicatedSendOptions o;
  o.base = options.base;
  o.k = options.k;
  o.replica_retention = options.replica_retention;
  o.order = std::move(targets).value();
  cluster::ReplicatedOutcome outcome = cluster::SendReplicated(path, o);
  for (cluster::ReplicaResult& r : outcome.replicas) {
    result.replicas.push_back(
        {std::move(r.target.address), r.counted, std::move(r.why_not), std::move(r.outcome)});
  }
  if (outcome.certificate)
    result.certificate_json = receipt::CertificateToJson(*outcome.certificate);
  result.status = outcome.status;
  return result;
}

}  // namespace writ
