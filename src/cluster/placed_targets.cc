#include "cluster/placed_targets.h"

#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "cluster/placement.h"

namespace writ::cluster {

Result<std::vector<ReplicaTarget>> PlacedTargets(const std::string& etcd_url,
                                                 const std::string& delivery_id,
                                                 const std::string& replica_retention) {
  WRIT_ASSIGN_OR_RETURN(EtcdClient etcd, EtcdClient::Open(etcd_url));
  WRIT_ASSIGN_OR_RETURN(std::vector<Member> members, ListMembers(etcd));
  std::vector<Member> offering;
  for (Member& m : members) {
    for (const std::string& c : m.retention)
      if (c == replica_retention) offering.push_back(m);
  }
  std::vector<ReplicaTarget> out;
  for (Member& m : PlacementOrder(delivery_id, std::move(offering)))
    out.push_back({m.address, m.public_key, m.domain});
  return out;
}

std::string DeliveryIdOfFile(const std::string& path, const std::string& id) {
  if (!id.empty()) return id;
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace writ::cluster
