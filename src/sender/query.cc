// writ::QueryDelivery: hello, a (signed) query, its answer.
#include "writ/query.h"

#include <nlohmann/json.hpp>

#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"

namespace writ {
namespace {

using json = nlohmann::json;

// The query, signed for the receiver that said hello when the asker has an identity.
Result<protocol::Query> QueryFor(const std::string& id, const std::string& identity_dir,
                                 const protocol::Hello& hello) {
  protocol::Query query;
  query.delivery_id = id;
  if (identity_dir.empty()) return query;
  auto identity = receipt::Identity::LoadOrCreate(identity_dir);
  if (!identity.ok()) return identity.status().Annotate("identity");
  WRIT_RETURN_IF_ERROR(sender::SignQuery(*identity, hello.receiver_id, query));
  return query;
}

Status ReadHeld(const json& j, HeldDelivery& held) {
  if (j.value("state", "unknown") != "retained") return Status::Ok();
  if (!j.contains("retention") || !j["retention"].is_string() || !j.contains("rule") ||
      !j["rule"].is_string() || !j.contains("bytes") || !j["bytes"].is_number_unsigned() ||
      !j.contains("digest") || !j["digest"].is_string() || !j.contains("receipts") ||
      !j["receipts"].is_array()) {
    return Status::Malformed("query answer: a retained delivery without its fields");
  }
  held.retained = true;
  held.retention = j["retention"].get<std::string>();
  held.rule = j["rule"].get<std::string>();
  held.bytes = j["bytes"].get<uint64_t>();
  held.digest = j["digest"].get<std::string>();
  for (const json& r : j["receipts"]) {
    held.receipts.push_back(r.is_string() ? r.get<std::string>() : r.dump());
  }
  return Status::Ok();
}

}  // namespace

Result<HeldDelivery> QueryDelivery(const std::string& delivery_id, const QueryOptions& options) {
  auto host_port = protocol::ParseHostPort(options.to);
  if (!host_port.ok()) return host_port.status().Annotate("to");
  auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second,
                                                   options.connect_timeout);
  if (!channel.ok()) {
    return Status::Transport("cannot reach " + options.to + ": " + channel.status().message());
  }
  auto hello = channel->Receive(options.connect_timeout);
  if (!hello.ok() || !std::holds_alternative<protocol::Hello>(*hello)) {
    return Status::Transport("the receiver at " + options.to + " did not say hello");
  }
  WRIT_ASSIGN_OR_RETURN(
      auto query, QueryFor(delivery_id, options.identity_dir, std::get<protocol::Hello>(*hello)));
  WRIT_RETURN_IF_ERROR(channel->Send(query));
  auto answer = channel->Receive(options.answer_timeout);
  if (!answer.ok()) return Status::Transport("no answer: " + answer.status().message());
  if (const auto* refuse = std::get_if<protocol::Refuse>(&*answer)) {
    return Status::Refused("query refused: " + refuse->detail);
  }
  const auto* qa = std::get_if<protocol::QueryAnswer>(&*answer);
  if (qa == nullptr) return Status::Malformed("unexpected answer to a query");
  const json j = json::parse(qa->json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Malformed("query answer is not JSON");
  HeldDelivery held;
  held.id = delivery_id;
  held.answer_json = qa->json;
  WRIT_RETURN_IF_ERROR(ReadHeld(j, held));
  return held;
}

}  // namespace writ
