// `writ serve --cluster URL --domain NAME`: the receiver's membership in etcd
// (cluster/registration.h), from the serve command's flags.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cluster/registration.h"
#include "serve_log.h"
#include "serve_repair_agent.h"
#include "writ/receiver.h"

namespace writ::cli {

struct ServeClusterFlags {
  std::string cluster;  // etcd client URL; empty: not a member of any cluster
  std::string domain;   // failure domain, signed into every receipt
  int64_t ttl_seconds = 10;
};

void AddServeClusterOptions(CLI::App& cmd, ServeClusterFlags& flags);

// Usage errors: --cluster without --domain, or a bad URL. Sets the receipts' domain.
Status ApplyServeCluster(const ServeClusterFlags& flags, ReceiverOptions& options);

// A serve's part in its cluster; ended (destroyed) before the receiver drains: it leaves
// the member set first, so no new sender places a copy here, then finishes any repair.
struct ClusterMembership {
  std::unique_ptr<cluster::Registration> registration;
  std::unique_ptr<RepairAgent> repair;  // with --data: carries out `writ repair` tasks
  void Leave() {
    registration.reset();
    repair.reset();
  }
};

// Registers the started receiver and, with a data directory, starts its repair agent
// (nothing when --cluster was not given). `identity`: the serve's identity directory.
Result<ClusterMembership> JoinCluster(const ServeClusterFlags& flags, const Receiver& receiver,
                                      const std::string& data_dir, const std::string& identity,
                                      std::shared_ptr<ServeLog> log);

}  // namespace writ::cli
