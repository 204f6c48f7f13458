#include "receiver/remote_removal.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "receipt/identity.h"
#include "receiver/out_files.h"
#include "receiver/receiver_core.h"
#include "store/lifecycle.h"
#include "writ/vocabulary.h"

namespace writ::receiver {
namespace {

using protocol::RefuseReason;

protocol::Refuse RemoveRefusal(const protocol::Remove& r, RefuseReason reason,
                               const std::string& detail) {
  return protocol::Refuse{r.delivery_id, reason, detail};
}

bool IsOperatorKey(const ReceiverCore& core, const std::vector<uint8_t>& key_bytes) {
  receipt::PublicKey key{};
  std::memcpy(key.data(), key_bytes.data(), key.size());
  return std::find(core.admin_keys.begin(), core.admin_keys.end(), key) != core.admin_keys.end();
}

void LogRemoteRemoval(ReceiverCore& core, const store::Removal& removal, const std::string& key_id,
                      bool force) {
  if (!core.options.on_store_event) return;
  core.options.on_store_event(store::RemovalLine(
      removal, std::string("removed by writ rm from key ") + key_id + (force ? " (forced)" : "")));
  if (core.options.out_dir.empty()) return;
  auto out = RemoveOutFiles(core.options.out_dir, removal.id);
  const std::string line = out.ok() ? *out : "out: " + out.status().message();
  if (!line.empty()) core.options.on_store_event(line);
}

}  // namespace

protocol::Message AnswerRemove(ReceiverCore& core, const protocol::Remove& r) {
  auto admitted =
      core.auth.AdmitRemove(r, core.signing_id, core.admin_keys, std::chrono::system_clock::now());
  if (!admitted.ok()) return RemoveRefusal(r, RefuseReason::kAuth, admitted.status().message());
  const std::string& key_id = *admitted;
  auto held = core.store->Lookup(r.delivery_id);
  if (!held.ok()) return RemoveRefusal(r, RefuseReason::kRetention, held.status().message());
  if (!held->has_value()) {
    return RemoveRefusal(r, RefuseReason::kUnknownDelivery,
                         r.delivery_id + " is not retained here");
  }
  // The same promise checks as `writ store rm`, for the key that delivered it or an operator.
  if ((*held)->meta.sender != key_id && !IsOperatorKey(core, r.sender_key)) {
    return RemoveRefusal(r, RefuseReason::kAuth,
                         "auth: key " + key_id + " did not deliver " + r.delivery_id +
                             " and is not an operator key of this receiver (serve --admin-key)");
  }
  auto removal = core.store->Remove(r.delivery_id, r.force != 0, store::NowUnixMs());
  if (!removal.ok()) {
    const Status& s = removal.status();
    if (s.code() == ErrorCode::kNotFound) {
      return RemoveRefusal(r, RefuseReason::kUnknownDelivery,
                           r.delivery_id + " is not retained here");
    }
    return RemoveRefusal(
        r, s.code() == ErrorCode::kRefused ? RefuseReason::kLimit : RefuseReason::kRetention,
        s.message());
  }
  LogRemoteRemoval(core, *removal, key_id, r.force != 0);
  const nlohmann::json answer{{"removed", removal->id},
                              {"retention", writ::RetentionName(removal->retention)},
                              {"bytes", removal->bytes},
                              {"promise_broken", removal->promise_broken}};
  return protocol::RemoveAnswer{r.delivery_id, answer.dump()};
}

}  // namespace writ::receiver
