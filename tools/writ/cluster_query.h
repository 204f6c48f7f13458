// `writ query ID --cluster URL`: asks every live member, in the placement order of ID,
// what it holds, and reports each copy with its signed retained receipt's domain.
#pragma once

#include <optional>
#include <string>

#include "cluster/member.h"
#include "writ/receipt.h"

namespace writ::cli {

struct CopyReport {
  cluster::Member member;
  std::string state;  // retained | absent | unreachable: ... | receipt invalid: ...
  std::string retention;
  std::optional<Receipt> retained;  // when "retained": the receipt, verified
};

// Asks `member` what it holds for `id`. A copy counts as held only with a retained
// receipt that verifies against the key the member registered and signs its registered
// domain.
CopyReport AskMember(const cluster::Member& member, const std::string& id,
                     const std::string& identity);

struct ClusterQueryRequest {
  std::string id;
  std::string cluster;
  std::string identity;
  bool json = false;
};

// Exit 0 when at least one member holds a retained copy, 1 when none does, 4 when etcd
// cannot be reached.
int RunClusterQuery(const ClusterQueryRequest& request);

}  // namespace writ::cli
