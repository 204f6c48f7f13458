#include "receiver/query_answer.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "receiver/receiver_core.h"

namespace writ::receiver {

protocol::Message AnswerQuery(ReceiverCore& core, const protocol::Query& q) {
  using json = nlohmann::json;
  auto admitted = core.auth.AdmitQuery(q, core.signing_id, std::chrono::system_clock::now());
  if (!admitted.ok()) {
    return protocol::Refuse{q.delivery_id, protocol::RefuseReason::kAuth,
                            admitted.status().message()};
  }
  auto held = core.store->LookupVerified(q.delivery_id);
  json answer{{"id", q.delivery_id}};
  if (!held.ok() || !held->has_value()) {
    answer["state"] = "unknown";
  } else {
    const store::RetainedDelivery& d = **held;
    answer["state"] = "retained";
    answer["retention"] = writ::RetentionName(d.retention);
    answer["bytes"] = d.meta.bytes;
    answer["rule"] = writ::RuleName(d.meta.rule);
    answer["digest"] = writ::ToHex(d.meta.digest);
    answer["receipts"] = json::array();
    for (const auto& r : d.receipts) {
      // Stored by this receiver, so JSON; should one not parse, it is passed on as text
      // rather than ending the process with an exception.
      json parsed = json::parse(r, nullptr, /*allow_exceptions=*/false);
      answer["receipts"].push_back(parsed.is_discarded() ? json(r) : std::move(parsed));
    }
  }
  return protocol::QueryAnswer{q.delivery_id, answer.dump()};
}

}  // namespace writ::receiver
