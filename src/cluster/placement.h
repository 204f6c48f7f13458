// Where a delivery's copies go: rendezvous (highest-random-weight) hashing of the delivery
// id over the live members, so that every sender, `writ query` and `writ repair` compute
// the same order from the id and the member set alone, without a central index.
#pragma once

#include <string>
#include <vector>

#include "cluster/member.h"

namespace writ::cluster {

// Every member, best first: by SHA-256(id || 0x00 || public key), highest first. Members
// whose domain an earlier member already holds follow all members of unseen domains (they
// are never counted as a second copy in that domain, only tried when nothing else is left).
std::vector<Member> PlacementOrder(const std::string& delivery_id, std::vector<Member> members);

}  // namespace writ::cluster
