#include "sender/request_signing.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>

#include "protocol/codec.h"

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
  WRIT_ASSIGN_OR_RETURN(auto sig,
                        identity.Sign(protocol::AnnounceSigningBytes(announce, receiver_id)));
  announce.signature.assign(sig.begin(), sig.end());
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
