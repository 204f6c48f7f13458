#include "receiver/sender_auth.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "common/hex.h"
#include "protocol/announce_group.h"
#include "protocol/codec.h"
#include "vocabulary/digest.h"

namespace writ::receiver {

Result<SenderAuth> SenderAuth::FromAllowFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("--allow: cannot read " + path);
  SenderAuth auth;
  auth.allowed_.emplace();
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const std::string token = line.substr(start, line.find_first_of(" \t", start) - start);
    auto key = receipt::ParsePublicKeyHex(token);
    if (!key.ok()) {
      return Status::InvalidArgument("--allow " + path + ":" + std::to_string(number) + ": " +
                                     key.status().message());
    }
    auth.allowed_->insert(*key);
  }
  return auth;
}

Result<std::string> SenderAuth::Admit(const protocol::Announce& a, const std::string& receiver_id,
                                      std::chrono::system_clock::time_point now) {
  if (a.sender_key.empty()) {
    if (restricted()) {
      return Status::Refused(
          "auth: this receiver admits only senders on its allow list; sign the announce "
          "(writ send --identity DIR)");
    }
    return std::string();
  }
  return Check({a.sender_key, a.nonce, a.time_ms, a.signature},
               protocol::AnnounceSigningBytes(a, receiver_id), "announce", now);
}

Result<std::string> SenderAuth::AdmitQuery(const protocol::Query& q, const std::string& receiver_id,
                                           std::chrono::system_clock::time_point now) {
  if (q.sender_key.empty()) {
    if (restricted()) {
      return Status::Refused(
          "auth: this receiver answers queries only from senders on its allow list; sign the "
          "query (writ query --identity DIR)");
    }
    return std::string();
  }
  return Check({q.sender_key, q.nonce, q.time_ms, q.signature},
               protocol::QuerySigningBytes(q, receiver_id), "query", now);
}

Result<std::string> SenderAuth::AdmitRemove(const protocol::Remove& r,
                                            const std::string& receiver_id,
                                            const std::vector<receipt::PublicKey>& admin_keys,
                                            std::chrono::system_clock::time_point now) {
  if (r.sender_key.empty()) {
    return Status::Refused("auth: a removal must be signed (writ rm --identity DIR)");
  }
  receipt::PublicKey key{};
  std::memcpy(key.data(), r.sender_key.data(), key.size());
  const bool operator_key =
      std::find(admin_keys.begin(), admin_keys.end(), key) != admin_keys.end();
  return Check({r.sender_key, r.nonce, r.time_ms, r.signature},
               protocol::RemoveSigningBytes(r, receiver_id), "removal", now, operator_key);
}

Result<std::string> SenderAuth::Check(const Signed& m, const std::vector<uint8_t>& signed_bytes,
                                      const std::string& what,
                                      std::chrono::system_clock::time_point now,
                                      bool operator_key) {
  receipt::PublicKey key{};
  std::memcpy(key.data(), m.key.data(), key.size());
  const std::string key_id = receipt::KeyId(key);
  if (restricted() && !operator_key && !allowed_->count(key)) {
    return Status::Refused("auth: sender key " + key_id + " is not on the allow list");
  }
  WRIT_RETURN_IF_ERROR(Verify(m, key, signed_bytes, what, key_id));
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const int64_t window_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(kFreshness).count();
  const int64_t age_ms = now_ms - static_cast<int64_t>(m.time_ms);
  if (age_ms > window_ms || age_ms < -window_ms) {
    return Status::Refused("auth: stale " + what + ": signed " + std::to_string(age_ms / 1000) +
                           " s from now, outside the " + std::to_string(kFreshness.count()) +
                           "-minute window");
  }
  const std::string nonce_key = key_id + writ::ToHex(m.nonce);
  MutexLock lock(replay_->mu);
  if (!replay_->seen.Insert(nonce_key, static_cast<int64_t>(m.time_ms) + window_ms, now_ms)) {
    return Status::Refused("auth: replayed " + what + ": nonce already used by key " + key_id);
  }
  return key_id;
}

Status SenderAuth::Verify(const Signed& m, const receipt::PublicKey& key,
                          const std::vector<uint8_t>& signed_bytes, const std::string& what,
                          const std::string& key_id) {
  const std::string refusal =
      "auth: the " + what + "'s signature does not verify for key " + key_id;
  receipt::Signature signature{};
  std::memcpy(signature.data(), m.signature.data(), signature.size());  // sizes: validate.cc
  const auto group = protocol::ParseAnnounceGroup(m.signature);
  if (!group) {
    if (receipt::VerifySignature(key, signed_bytes, signature)) return Status::Ok();
    return Status::Refused(refusal);
  }
  const std::string_view leaf_bytes(reinterpret_cast<const char*>(signed_bytes.data()),
                                    signed_bytes.size());
  auto root = receipt::RootOfSiblings(receipt::LeafHash(group->index, group->leaves, leaf_bytes),
                                      group->index, group->leaves, group->siblings);
  if (!root.ok())
    return Status::Refused(refusal + " (group form: " + root.status().message() + ")");
  const VerifiedRoots::Root verified{key, *root, signature};
  if (roots_->Holds(verified)) return Status::Ok();
  if (!receipt::VerifySignature(key, protocol::AnnounceGroupSigningMessage(*root), signature)) {
    return Status::Refused(refusal + " (group form)");
  }
  roots_->Remember(verified);
  return Status::Ok();
}

bool SenderAuth::VerifiedRoots::Holds(const Root& wanted) const {
  MutexLock lock(mu);
  return std::any_of(roots.begin(), roots.end(), [&](const std::optional<Root>& r) {
    return r && r->key == wanted.key && r->root == wanted.root && r->signature == wanted.signature;
  });
}

void SenderAuth::VerifiedRoots::Remember(const Root& root) {
  MutexLock lock(mu);
  roots[next] = root;
  next = (next + 1) % kRemembered;
}

size_t SenderAuth::remembered_nonces() const {
  MutexLock lock(replay_->mu);
  return replay_->seen.size();
}

uint64_t SenderAuth::nonces_examined() const {
  MutexLock lock(replay_->mu);
  return replay_->seen.examined();
}

}  // namespace writ::receiver
