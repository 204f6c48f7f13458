// writ providers: what this machine's libfabric offers writ (like fi_info): each provider,
// its fabric and domains, the completion levels it grants, whether it checks memory keys.
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "fabric/provider.h"
#include "receipt/context.h"

namespace writ::cli {
namespace {

using json = nlohmann::json;

// One provider name with every domain it offers, and what writ makes of it.
json Describe(const std::string& name, const std::vector<fabric::OfferedDomain>& offered) {
  json domains = json::array();
  json entry{{"provider", name}};
  for (const auto& d : offered) {
    if (d.provider != name) continue;
    if (!entry.contains("fabric")) {
      entry["fabric"] = d.fabric;
      entry["endpoint"] = d.kind == fabric::EndpointKind::kMsg ? "msg" : "rdm";
    }
    domains.push_back(d.domain);
  }
  entry["domains"] = domains;
  fabric::ProviderRequest request;
  request.provider = name;
  request.role = fabric::Role::kTarget;
  auto info = fabric::ProviderInfo::Discover(request);
  entry["usable"] = info.ok();
  if (!info.ok()) {
    entry["notes"] = json::array({"not usable by writ: " + info.status().message()});
    return entry;
  }
  json levels = json::array();
  for (CompletionLevel level : info->supported_levels())
    levels.push_back(std::string(CompletionLevelName(level)));
  entry["completion_levels"] = levels;
  entry["keys_checked"] = info->checks_remote_keys();
  entry["max_message_bytes"] = info->max_message_size();
  entry["version"] = info->provider_version();
  // The notes a receipt over this provider carries.
  entry["notes"] = receipt::ContextFor(*info, CompletionLevel::kDelivery, true).notes;
  return entry;
}

// The provider serve and send pick without --provider; empty when none is usable.
std::string DefaultProvider() {
  auto info = fabric::ProviderInfo::Discover(fabric::ProviderRequest{});
  return info.ok() ? info->name() : "";
}

json Offered(const std::vector<fabric::OfferedDomain>& offered) {
  json out{{"libfabric", fabric::LibfabricVersion()},
           {"default", DefaultProvider()},
           {"providers", json::array()}};
  std::vector<std::string> names;
  for (const auto& d : offered) {
    if (std::find(names.begin(), names.end(), d.provider) == names.end())
      names.push_back(d.provider);
  }
  for (const auto& name : names) out["providers"].push_back(Describe(name, offered));
  return out;
}

std::string Joined(const json& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : ", ") + item.get<std::string>();
  return out.empty() ? "none" : out;
}

void PrintText(const json& out) {
  std::cout << out["libfabric"].get<std::string>() << "; without --provider, serve uses "
            << (out["default"].get<std::string>().empty() ? "none (no usable provider)"
                                                          : out["default"].get<std::string>())
            << "\n";
  for (const auto& p : out["providers"]) {
    std::cout << "\n" << Printable(p["provider"].get<std::string>()) << "\n";
    std::cout << "  endpoint:          " << p["endpoint"].get<std::string>()
              << (p["endpoint"] == "msg" ? " (connected)" : " (reliable datagram)") << "\n";
    std::cout << "  fabric:            " << Printable(p["fabric"].get<std::string>()) << "\n";
    std::cout << "  domains:           " << Printable(Joined(p["domains"])) << "\n";
    if (p["usable"].get<bool>()) {
      std::cout << "  completion levels: " << Joined(p["completion_levels"]) << "\n";
      std::cout << "  keys checked:      " << (p["keys_checked"].get<bool>() ? "yes" : "no")
                << "\n";
      const uint64_t largest = p["max_message_bytes"].get<uint64_t>();
      std::cout << "  largest write:     "
                << (largest >= (uint64_t{1} << 62) ? std::string("unbounded")
                                                   : std::to_string(largest) + " bytes")
                << "\n";
    }
    for (const auto& note : p["notes"])
      std::cout << "  note: " << Printable(note.get<std::string>()) << "\n";
  }
  if (out["providers"].empty()) std::cout << "no provider offers what writ needs here\n";
}

int RunProviders(bool as_json) {
  auto offered = fabric::AvailableProviders();
  if (!offered.ok()) return ReportError(offered.status());
  const json out = Offered(*offered);
  if (as_json) {
    std::cout << out.dump(2) << std::endl;
  } else {
    PrintText(out);
  }
  return kExitOk;
}

void RegisterProviders(CLI::App& app, CommandContext& ctx) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "providers",
      "What this machine offers: each libfabric provider writ can use, its fabric and "
      "domains, completion levels, whether it checks memory keys");
  cmd->add_flag("--json", *as_json, "print one JSON document");
  cmd->callback([as_json, &ctx] { ctx.exit_code = RunProviders(*as_json); });
}

}  // namespace

WRIT_REGISTER_COMMAND(85, RegisterProviders);

}  // namespace writ::cli
