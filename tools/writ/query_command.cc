// writ query: what a receiver holds for one delivery id now.
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"

namespace writ::cli {
namespace {

using namespace std::chrono_literals;

struct QueryFlags {
  std::string id;
  std::string to;
  std::string provider;
  std::string identity;  // signs the query (a receiver with --allow answers only signed ones)
  bool json = false;
};

// The query, signed for the receiver that said hello when the sender has an identity.
Result<protocol::Query> QueryFor(const QueryFlags& f, const protocol::Hello& hello) {
  protocol::Query query;
  query.delivery_id = f.id;
  if (f.identity.empty()) return query;
  auto identity = receipt::Identity::LoadOrCreate(f.identity);
  if (!identity.ok()) return identity.status().Annotate("--identity");
  WRIT_RETURN_IF_ERROR(sender::SignQuery(*identity, hello.receiver_id, query));
  return query;
}

int RunQuery(const QueryFlags& f) {
  auto host_port = protocol::ParseHostPort(f.to);
  if (!host_port.ok())
    return ReportError(Status::InvalidArgument("--to: " + host_port.status().message()));
  auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second, 10s);
  if (!channel.ok())
    return ReportError(
        Status::Transport("cannot reach " + f.to + ": " + channel.status().message()));
  auto hello = channel->Receive(10s);
  if (!hello.ok() || !std::holds_alternative<protocol::Hello>(*hello)) {
    return ReportError(Status::Transport("the receiver at " + f.to + " did not say hello"));
  }
  auto query = QueryFor(f, std::get<protocol::Hello>(*hello));
  if (!query.ok()) return ReportError(query.status());
  if (Status sent = channel->Send(*query); !sent.ok()) return ReportError(sent);
  auto answer = channel->Receive(30s);
  if (!answer.ok())
    return ReportError(Status::Transport("no answer: " + answer.status().message()));
  if (const auto* refuse = std::get_if<protocol::Refuse>(&*answer)) {
    return ReportError(Status::Refused("query refused: " + refuse->detail));
  }
  const auto* qa = std::get_if<protocol::QueryAnswer>(&*answer);
  if (qa == nullptr) return ReportError(Status::Malformed("unexpected answer to a query"));
  auto j = nlohmann::json::parse(qa->json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return ReportError(Status::Malformed("query answer is not JSON"));
  const bool known = j.value("state", "unknown") == "retained";
  if (f.json) {
    std::cout << j.dump(2) << std::endl;
  } else if (known) {
    std::cout << Printable(f.id) << ": retained (" << Printable(j.value("retention", "?")) << "), "
              << j.value("bytes", 0) << " bytes, " << Printable(j.value("rule", "?")) << " "
              << Printable(j.value("digest", "?")) << ", " << j["receipts"].size() << " receipt(s)"
              << std::endl;
  } else {
    std::cout << Printable(f.id) << ": unknown to this receiver" << std::endl;
  }
  if (!known) {
    std::cerr << "writ: " << Printable(f.id) << " is not held by " << Printable(f.to) << std::endl;
    return kExitNotFound;
  }
  return kExitOk;
}

void RegisterQuery(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<QueryFlags>();
  CLI::App* cmd = app.add_subcommand("query", "What a receiver holds for ID now");
  cmd->add_option("ID", f->id, "delivery id")->required();
  cmd->add_option("--to", f->to, "receiver HOST:PORT")->required();
  cmd->add_option("--provider", f->provider,
                  "accepted for symmetry; queries use the control connection");
  cmd->add_option("--identity", f->identity,
                  "sign the query with the Ed25519 identity in DIR (created on first use)");
  cmd->add_flag("--json", f->json, "print one JSON document");
  cmd->callback([f, &ctx] { ctx.exit_code = RunQuery(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(30, RegisterQuery);

}  // namespace writ::cli
