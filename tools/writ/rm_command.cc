// `writ rm ID --to HOST:PORT --identity DIR [--force] [--json]`: removes a retained
// delivery through the serve that holds it (docs/protocol.md, "Removal"); `writ store rm`
// is the same removal offline.
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "protocol/control_channel.h"
#include "receipt/identity.h"
#include "sender/request_signing.h"

namespace writ::cli {
namespace {

struct RmFlags {
  std::string id;
  std::string to;
  std::string identity;
  bool force = false;
  bool json = false;
};

// A refusal as `writ store rm` would have exited for the same cause.
int ExitForRemoveRefusal(const protocol::Refuse& refuse) {
  const std::string why = "removal refused (" +
                          std::string(protocol::RefuseReasonName(refuse.reason)) +
                          "): " + refuse.detail;
  switch (refuse.reason) {
    case protocol::RefuseReason::kUnknownDelivery: return ReportError(Status::NotFound(why));
    case protocol::RefuseReason::kRetention: return ReportError(Status::Retention(why));
    default: return ReportError(Status::Refused(why));
  }
}

Result<protocol::Message> AskRemoval(const RmFlags& f) {
  auto identity = receipt::Identity::LoadOrCreate(f.identity);
  if (!identity.ok()) return Status::InvalidArgument("--identity: " + identity.status().message());
  auto host_port = protocol::ParseHostPort(f.to);
  if (!host_port.ok()) return Status::InvalidArgument("--to: " + host_port.status().message());
  constexpr std::chrono::milliseconds kRmTimeout{30000};
  auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second, kRmTimeout);
  if (!channel.ok()) {
    return Status::Transport("cannot reach " + f.to + ": " + channel.status().message());
  }
  auto hello = channel->Receive(kRmTimeout);
  if (!hello.ok() || !std::holds_alternative<protocol::Hello>(*hello)) {
    return Status::Transport("the receiver at " + f.to + " did not say hello");
  }
  protocol::Remove remove;
  remove.delivery_id = f.id;
  remove.force = f.force ? 1 : 0;
  WRIT_RETURN_IF_ERROR(
      sender::SignRemove(*identity, std::get<protocol::Hello>(*hello).receiver_id, remove));
  WRIT_RETURN_IF_ERROR(channel->Send(remove));
  auto answer = channel->Receive(kRmTimeout);
  if (!answer.ok()) return Status::Transport("no answer: " + answer.status().message());
  return answer;
}

int RunRm(const RmFlags& f) {
  auto answer = AskRemoval(f);
  if (!answer.ok()) return ReportError(answer.status());
  if (const auto* refuse = std::get_if<protocol::Refuse>(&*answer)) {
    return ExitForRemoveRefusal(*refuse);
  }
  const auto* removed = std::get_if<protocol::RemoveAnswer>(&*answer);
  if (removed == nullptr) return ReportError(Status::Malformed("unexpected answer to a removal"));
  const auto j = nlohmann::json::parse(removed->json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return ReportError(Status::Malformed("the removal's answer is not JSON"));
  }
  if (f.json) {
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << "removed " << Printable(f.id) << " (" << j.value("bytes", uint64_t{0})
              << " bytes, " << Printable(j.value("retention", std::string("?"))) << ") from "
              << Printable(f.to) << (j.value("promise_broken", false) ? "; PROMISE BROKEN" : "")
              << std::endl;
  }
  return kExitOk;
}

void RegisterRmCommand(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<RmFlags>();
  CLI::App* cmd = app.add_subcommand(
      "rm",
      "Remove a retained delivery through the serve that holds it (signed; allowed for the "
      "key that delivered it and the serve's --admin-key keys)");
  cmd->add_option("ID", f->id, "delivery id")->required();
  cmd->add_option("--to", f->to, "receiver HOST:PORT")->required();
  cmd->add_option("--identity", f->identity,
                  "sign the removal with the Ed25519 identity in DIR: the one that delivered "
                  "ID, or an operator key of the serve")
      ->required();
  cmd->add_flag("--force", f->force,
                "remove it even before the time its retained receipt promised (a TTL); logged "
                "as PROMISE BROKEN");
  cmd->add_flag("--json", f->json, "print one JSON document");
  cmd->callback([f, &ctx] { ctx.exit_code = RunRm(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(35, RegisterRmCommand);

}  // namespace writ::cli
