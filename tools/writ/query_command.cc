// writ query: what a receiver holds for one delivery id now.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cluster_query.h"
#include "command.h"
#include "common/printable.h"
#include "writ/query.h"

namespace writ::cli {
namespace {

struct QueryFlags {
  std::string id;
  std::string to;
  std::string provider;
  std::string identity;  // signs the query (a receiver with --allow answers only signed ones)
  bool json = false;
  std::string cluster;  // --cluster: every live member, in placement order (cluster_query.h)
};

int RunQuery(const QueryFlags& f) {
  if (!f.cluster.empty() && !f.to.empty())
    return ReportError(Status::InvalidArgument("give --to or --cluster, not both"));
  if (!f.cluster.empty()) return RunClusterQuery({f.id, f.cluster, f.identity, f.json});
  if (f.to.empty()) return ReportError(Status::InvalidArgument("--to or --cluster is required"));
  QueryOptions options;
  options.to = f.to;
  options.identity_dir = f.identity;
  auto held = QueryDelivery(f.id, options);
  if (!held.ok()) {
    const Status& s = held.status();
    if (s.code() == ErrorCode::kInvalidArgument)
      return ReportError(Status::InvalidArgument("--" + s.message()));
    return ReportError(s);
  }
  const auto j = nlohmann::json::parse(held->answer_json, nullptr, false);
  const bool known = held->retained;
  if (f.json) {
    std::cout << j.dump(2) << std::endl;
  } else if (known) {
    std::cout << Printable(f.id) << ": retained (" << Printable(held->retention) << "), "
              << held->bytes << " bytes, " << Printable(held->rule) << " "
              << Printable(held->digest) << ", " << held->receipts.size() << " receipt(s)"
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
  cmd->add_option("--to", f->to, "receiver HOST:PORT");
  cmd->add_option("--cluster", f->cluster,
                  "etcd client URL: ask every live member, in the placement order of ID");
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
