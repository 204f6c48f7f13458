#include "sender/request_signing.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>

#include "protocol/announce_group.h"
#include "protocol/codec.h"
#include "receipt/merkle.h"

namespace writ::sender {
namespace {

// Fills key, a fresh nonce and the time; the caller signs over the result.
template <typename M>
Status FillSignedFields(const receipt::Identity& identity, M& m) {
  const auto& key = identity.public_key();
  m.sender_key.assign(key.begin(), key.end());
  m.nonce.resize(protocol::kNonceBytes);
  if (getrandom(m.nonce.data(), m.nonce.size(), 0) != static_cast<ssize_t>(m.nonce.size())) {
    return Status::Io("getrandom failed for a request nonce", errno);
  }
  m.time_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  m.signature.clear();
  return Status::Ok();
}

}  // namespace

Status SignAnnounce(const receipt::Identity& identity, const std::string& receiver_id,
                    protocol::Announce& announce) {
  WRIT_RETURN_IF_ERROR(FillSignedFields(identity, announce));
  protocol::Announce* const alone = &announce;
  return SignAnnounces(identity, receiver_id, std::span(&alone, 1));
}

Status PrepareAnnounceSignature(const receipt::Identity& identity, protocol::Announce& announce) {
  return FillSignedFields(identity, announce);
}

Status SignAnnounces(const receipt::Identity& identity, const std::string& receiver_id,
                     std::span<protocol::Announce* const> announces) {
  if (announces.empty()) return Status::Ok();
  if (announces.size() == 1) {
    protocol::Announce& a = *announces.front();
    WRIT_ASSIGN_OR_RETURN(auto sig, identity.Sign(protocol::AnnounceSigningBytes(a, receiver_id)));
    a.signature.assign(sig.begin(), sig.end());
    return Status::Ok();
  }
  if (announces.size() > protocol::kMaxAnnounceGroup) {
    WRIT_RETURN_IF_ERROR(
        SignAnnounces(identity, receiver_id, announces.first(protocol::kMaxAnnounceGroup)));
    return SignAnnounces(identity, receiver_id, announces.subspan(protocol::kMaxAnnounceGroup));
  }
  const auto leaves = static_cast<uint32_t>(announces.size());
  std::vector<receipt::MerkleHash> leaf_hashes;
  leaf_hashes.reserve(leaves);
  for (uint32_t i = 0; i < leaves; ++i) {
    const std::vector<uint8_t> bytes = protocol::AnnounceSigningBytes(*announces[i], receiver_id);
    leaf_hashes.push_back(receipt::LeafHash(
        i, leaves, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  }
  const auto levels = receipt::MerkleLevels(std::move(leaf_hashes));
  WRIT_ASSIGN_OR_RETURN(auto sig,
                        identity.Sign(protocol::AnnounceGroupSigningMessage(levels.back()[0])));
  for (uint32_t i = 0; i < leaves; ++i) {
    std::vector<uint8_t>& field = announces[i]->signature;
    protocol::EncodeAnnounceGroupHeader(field, sig, i, leaves);
    receipt::ForEachPathStep(levels, i, [&field](std::string_view, const receipt::MerkleHash& h) {
      field.insert(field.end(), h.begin(), h.end());
    });
  }
  return Status::Ok();
}

Status SignQuery(const receipt::Identity& identity, const std::string& receiver_id,
                 protocol::Query& query) {
  WRIT_RETURN_IF_ERROR(FillSignedFields(identity, query));
  WRIT_ASSIGN_OR_RETURN(auto sig, identity.Sign(protocol::QuerySigningBytes(query, receiver_id)));
  query.signature.assign(sig.begin(), sig.end());
  return Status::Ok();
}

Status SignRemove(const receipt::Identity& identity, const std::string& receiver_id,
                  protocol::Remove& remove) {
  WRIT_RETURN_IF_ERROR(FillSignedFields(identity, remove));
  WRIT_ASSIGN_OR_RETURN(auto sig, identity.Sign(protocol::RemoveSigningBytes(remove, receiver_id)));
  remove.signature.assign(sig.begin(), sig.end());
  return Status::Ok();
}

Status SignCommit(const receipt::Identity& identity, const std::string& receiver_id,
                  const std::vector<uint8_t>& announce_nonce, protocol::Commit& commit) {
  commit.signature.clear();
  WRIT_ASSIGN_OR_RETURN(
      auto sig, identity.Sign(protocol::CommitSigningBytes(commit, receiver_id, announce_nonce)));
  commit.signature.assign(sig.begin(), sig.end());
  return Status::Ok();
}

}  // namespace writ::sender
