#include "cluster/member.h"

#include <nlohmann/json.hpp>

namespace writ::cluster {

using json = nlohmann::json;

std::string MemberToJson(const Member& m) {
  return json{{"address", m.address},      {"provider", m.provider}, {"public_key", m.public_key},
              {"key_id", m.key_id},        {"domain", m.domain},     {"retention", m.retention},
              {"free_bytes", m.free_bytes}}
      .dump();
}

Result<Member> MemberFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Malformed("member: not a JSON object");
  Member m;
  for (auto [key, out] : {std::pair{"address", &m.address},
                          {"provider", &m.provider},
                          {"public_key", &m.public_key},
                          {"key_id", &m.key_id},
                          {"domain", &m.domain}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string())
      return Status::Malformed(std::string("member.") + key + ": missing or not a string");
    *out = it->get<std::string>();
  }
  if (m.address.empty() || m.public_key.size() != 64 || m.domain.empty())
    return Status::Malformed("member: address, public_key (64 hex) and domain are required");
  if (auto it = j.find("retention"); it != j.end() && it->is_array()) {
    for (const json& r : *it)
      if (r.is_string()) m.retention.push_back(r.get<std::string>());
  }
  if (auto it = j.find("free_bytes"); it != j.end() && it->is_number_unsigned())
    m.free_bytes = it->get<uint64_t>();
  return m;
}

Result<std::vector<Member>> ListMembers(const EtcdClient& etcd) {
  WRIT_ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, etcd.Prefix(kMembersPrefix));
  std::vector<Member> members;
  for (const KeyValue& kv : kvs) {
    auto m = MemberFromJson(kv.value);
    if (!m.ok()) continue;
    m->lease = kv.lease;
    members.push_back(std::move(m).value());
  }
  return members;
}

}  // namespace writ::cluster
