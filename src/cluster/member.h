// A receiver as the cluster sees it: what `writ serve --cluster` registers in etcd under
// kMembersPrefix, one key per receiver (its key id), bound to a lease it keeps alive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/etcd_client.h"
#include "writ/status.h"

namespace writ::cluster {

inline constexpr const char* kMembersPrefix = "/writ/members/";

struct Member {
  std::string address;     // control address, HOST:PORT
  std::string provider;    // libfabric provider it serves
  std::string public_key;  // 64 hex digits: the key its receipts are signed with
  std::string key_id;
  std::string domain;                  // failure domain, as signed in its receipts
  std::vector<std::string> retention;  // classes offered
  uint64_t free_bytes = 0;             // free space in its data directory (0: no --data)
  int64_t lease = 0;                   // etcd lease (read back; not part of the value)
};

std::string MemberToJson(const Member& m);
// Strict about the fields placement relies on (address, public key, domain).
Result<Member> MemberFromJson(std::string_view text);

// The live members: every key under kMembersPrefix (a crashed receiver's key is gone once
// its lease expired). A member whose value does not parse is skipped, not fatal.
Result<std::vector<Member>> ListMembers(const EtcdClient& etcd);

}  // namespace writ::cluster
