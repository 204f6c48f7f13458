// `writ serve --cluster URL --domain NAME`: the receiver's membership in etcd
// (cluster/registration.h), from the serve command's flags.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cluster/registration.h"
#include "serve_log.h"
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

// Registers the started receiver (nothing when --cluster was not given).
Result<std::unique_ptr<cluster::Registration>> JoinCluster(const ServeClusterFlags& flags,
                                                           const Receiver& receiver,
                                                           const std::string& data_dir,
                                                           std::shared_ptr<ServeLog> log);

}  // namespace writ::cli
