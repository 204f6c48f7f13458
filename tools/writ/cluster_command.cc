// writ cluster ls: the receivers registered in etcd now (live leases only).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cluster/member.h"
#include "command.h"
#include "common/printable.h"

namespace writ::cli {
namespace {

struct ClusterFlags {
  std::string cluster;
  bool json = false;
};

int RunClusterLs(const ClusterFlags& f) {
  auto etcd = cluster::EtcdClient::Open(f.cluster);
  if (!etcd.ok()) return ReportError(etcd.status());
  auto members = cluster::ListMembers(*etcd);
  if (!members.ok()) return ReportError(members.status());
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const cluster::Member& m : *members) {
      auto j = nlohmann::json::parse(cluster::MemberToJson(m));
      j["lease"] = m.lease;
      out.push_back(std::move(j));
    }
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  std::cout << members->size() << " member(s) in " << Printable(f.cluster) << '\n';
  for (const cluster::Member& m : *members) {
    std::string classes;
    for (const std::string& c : m.retention) classes += (classes.empty() ? "" : ",") + c;
    std::cout << Printable(m.address) << "  domain " << Printable(m.domain) << "  key "
              << Printable(m.key_id) << "  provider " << Printable(m.provider) << "  retention "
              << Printable(classes) << "  free " << m.free_bytes << " bytes\n";
  }
  return kExitOk;
}

void RegisterCluster(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand("cluster", "The receivers registered in etcd");
  cmd->require_subcommand(1);
  auto f = std::make_shared<ClusterFlags>();
  CLI::App* ls = cmd->add_subcommand("ls", "List the live members (address, domain, key)");
  ls->add_option("--cluster", f->cluster, "etcd client URL, http://HOST:PORT")->required();
  ls->add_flag("--json", f->json, "print one JSON array");
  ls->callback([f, &ctx] { ctx.exit_code = RunClusterLs(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(75, RegisterCluster);

}  // namespace writ::cli
