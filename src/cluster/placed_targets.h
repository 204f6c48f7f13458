// The receivers a replicated send tries, best first: etcd's live members that offer the
// replica class, in the placement order of the delivery id.
#pragma once

#include <string>
#include <vector>

#include "cluster/replicated_send.h"
#include "writ/status.h"

namespace writ::cluster {

Result<std::vector<ReplicaTarget>> PlacedTargets(const std::string& etcd_url,
                                                 const std::string& delivery_id,
                                                 const std::string& replica_retention);

// The id a file is delivered under when none is given: its name.
std::string DeliveryIdOfFile(const std::string& path, const std::string& id);

}  // namespace writ::cluster
