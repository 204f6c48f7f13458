// Who may write into this receiver's memory: with an allow list, only senders
// whose Ed25519 key is listed, whose announce signature verifies, and whose
// announce is fresh (time within the window, nonce not seen before).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/mutex.h"
#include "protocol/messages.h"
#include "receipt/identity.h"
#include "receiver/replay_set.h"
#include "writ/status.h"

namespace writ::receiver {

class SenderAuth {
 public:
  // No allow list: anyone is admitted (a signed announce is still checked).
  SenderAuth() : replay_(std::make_unique<ReplayCache>()) {}
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

  struct ReplayCache {
    mutable Mutex mu;
    ReplaySet seen GUARDED_BY(mu);  // key id + nonce, until the announce is stale
  };
  std::optional<std::set<receipt::PublicKey>> allowed_;
  std::unique_ptr<ReplayCache> replay_;
};

}  // namespace writ::receiver
