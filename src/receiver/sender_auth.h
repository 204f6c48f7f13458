// Who may write into this receiver's memory: with an allow list, only senders
// whose Ed25519 key is listed, whose announce signature verifies, and whose
// announce is fresh (time within the window, nonce not seen before).
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/mutex.h"
#include "protocol/messages.h"
#include "receipt/identity.h"
#include "receipt/merkle.h"
#include "receiver/replay_set.h"
#include "writ/status.h"

namespace writ::receiver {

class SenderAuth {
 public:
  // No allow list: anyone is admitted (a signed announce is still checked).
  SenderAuth()
      : replay_(std::make_unique<ReplayCache>()), roots_(std::make_unique<VerifiedRoots>()) {}
  // One hex public key per line; blank lines and lines starting with '#' are ignored.
  static Result<SenderAuth> FromAllowFile(const std::string& path);

  bool restricted() const { return allowed_.has_value(); }
  size_t allowed_count() const { return allowed_ ? allowed_->size() : 0; }

  // The sender's name for limits and logs: its key id when signed. Refused (kRefused,
  // message naming the reason) when the announce may not get a window.
  Result<std::string> Admit(const protocol::Announce& announce, const std::string& receiver_id,
                            std::chrono::system_clock::time_point now);

  // The same for a query: with an allow list, only signed queries from listed keys.
  Result<std::string> AdmitQuery(const protocol::Query& query, const std::string& receiver_id,
                                 std::chrono::system_clock::time_point now);

  // A removal (`writ rm`): always signed, checked as a query is, except that a key in
  // `admin_keys` passes even when an allow list does not name it. Returns the key id;
  // who may remove which delivery is the caller's check.
  Result<std::string> AdmitRemove(const protocol::Remove& remove, const std::string& receiver_id,
                                  const std::vector<receipt::PublicKey>& admin_keys,
                                  std::chrono::system_clock::time_point now);

  static constexpr std::chrono::minutes kFreshness{5};

  // For tests: nonces remembered now, and remembered nonces looked at by every Admit so
  // far (the work of forgetting expired ones).
  size_t remembered_nonces() const;
  uint64_t nonces_examined() const;

 private:
  // The authentication fields of an announce or a query (validated sizes).
  struct Signed {
    const std::vector<uint8_t>& key;
    const std::vector<uint8_t>& nonce;
    uint64_t time_ms;
    const std::vector<uint8_t>& signature;
  };
  Result<std::string> Check(const Signed& m, const std::vector<uint8_t>& signed_bytes,
                            const std::string& what, std::chrono::system_clock::time_point now,
                            bool operator_key = false);

  // The signature `m` carries over `signed_bytes`: plain, or an announce's group form,
  // whose root's signature is verified once for the whole group (VerifiedRoots).
  Status Verify(const Signed& m, const receipt::PublicKey& key,
                const std::vector<uint8_t>& signed_bytes, const std::string& what,
                const std::string& key_id);

  // The last group roots whose signatures verified, each with its key and signature: the
  // other announces of a group verified already cost their leaf's path alone.
  struct VerifiedRoots {
    struct Root {
      receipt::PublicKey key{};
      receipt::MerkleHash root{};
      receipt::Signature signature{};
    };
    static constexpr size_t kRemembered = 16;
    mutable Mutex mu;
    std::array<std::optional<Root>, kRemembered> roots GUARDED_BY(mu);
    size_t next GUARDED_BY(mu) = 0;
    bool Holds(const Root& root) const;
    void Remember(const Root& root);
  };

  struct ReplayCache {
    mutable Mutex mu;
    ReplaySet seen GUARDED_BY(mu);  // key id + nonce, until the announce is stale
  };
  std::optional<std::set<receipt::PublicKey>> allowed_;
  std::unique_ptr<ReplayCache> replay_;
  std::unique_ptr<VerifiedRoots> roots_;
};

}  // namespace writ::receiver
