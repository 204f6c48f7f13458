#include "cluster/placement.h"

#include <openssl/sha.h>

#include <algorithm>
#include <set>

namespace writ::cluster {
namespace {

std::string RendezvousScore(const std::string& id, const std::string& public_key) {
  std::string input = id;
  input.push_back('\0');
  input += public_key;
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

}  // namespace

std::vector<Member> PlacementOrder(const std::string& delivery_id, std::vector<Member> members) {
  std::vector<std::pair<std::string, Member>> scored;
  scored.reserve(members.size());
  for (Member& m : members) {
    std::string score = RendezvousScore(delivery_id, m.public_key);
    scored.emplace_back(std::move(score), std::move(m));
  }
  std::sort(scored.begin(), scored.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Member> first, repeated;
  std::set<std::string> domains;
  for (auto& [score, m] : scored) {
    (domains.insert(m.domain).second ? first : repeated).push_back(std::move(m));
  }
  first.insert(first.end(), repeated.begin(), repeated.end());
  return first;
}

}  // namespace writ::cluster
