#include "serve_cluster.h"

#include <sys/statvfs.h>

namespace writ::cli {

void AddServeClusterOptions(CLI::App& cmd, ServeClusterFlags& flags) {
  cmd.add_option("--cluster", flags.cluster,
                 "etcd client URL (http://HOST:PORT): register this receiver there under a "
                 "lease, for replicated:K senders; with --data, also carry out `writ repair` "
                 "tasks for the copies it holds (docs/operating.md)")
      ->group("Cluster");
  cmd.add_option("--domain", flags.domain,
                 "failure domain (rack, host, zone): signed into every receipt; required with "
                 "--cluster")
      ->group("Cluster");
  cmd.add_option("--cluster-ttl", flags.ttl_seconds,
                 "seconds of the etcd lease: a receiver that stops keeping it alive drops out "
                 "after this")
      ->capture_default_str()
      ->group("Cluster");
}

Status ApplyServeCluster(const ServeClusterFlags& flags, ReceiverOptions& options) {
  if (!flags.cluster.empty() && flags.domain.empty()) {
    return Status::InvalidArgument(
        "--cluster needs --domain: a replicated:K certificate counts distinct failure domains");
  }
  if (flags.ttl_seconds < 2) return Status::InvalidArgument("--cluster-ttl: at least 2 seconds");
  if (!flags.cluster.empty()) {
    WRIT_RETURN_IF_ERROR(cluster::EtcdClient::Open(flags.cluster).status());
  }
  options.failure_domain = flags.domain;
  return Status::Ok();
}

Result<ClusterMembership> JoinCluster(const ServeClusterFlags& flags, const Receiver& receiver,
                                      const std::string& data_dir, const std::string& identity,
                                      std::shared_ptr<ServeLog> log) {
  ClusterMembership membership;
  if (flags.cluster.empty()) return membership;
  WRIT_ASSIGN_OR_RETURN(cluster::EtcdClient etcd, cluster::EtcdClient::Open(flags.cluster));
  cluster::Member m;
  m.address = receiver.listen_address();
  m.provider = receiver.provider();
  m.public_key = receiver.public_key_hex();
  m.key_id = receiver.key_id();
  m.domain = flags.domain;
  m.retention = {"volatile"};
  if (!data_dir.empty()) {
    m.retention.insert(m.retention.end(), {"process-restart", "power-loss"});
    struct statvfs fs {};
    if (statvfs(data_dir.c_str(), &fs) == 0) m.free_bytes = uint64_t{fs.f_bavail} * fs.f_frsize;
  }
  if (!data_dir.empty()) {
    RepairAgent::Options repair;
    repair.key_id = m.key_id;
    repair.data_dir = data_dir;
    repair.identity = identity.empty() ? data_dir + "/identity" : identity;
    WRIT_ASSIGN_OR_RETURN(membership.repair, RepairAgent::Start(etcd, std::move(repair), log));
  }
  auto registration =
      cluster::Registration::Start(std::move(etcd), m, flags.ttl_seconds,
                                   [log](const std::string& line) { log->Info("cluster", line); });
  if (!registration.ok()) return registration.status().Annotate("--cluster");
  log->Info("cluster", "registered in etcd at " + flags.cluster + " as " + (*registration)->key() +
                           " (domain " + flags.domain + ", lease " +
                           std::to_string(flags.ttl_seconds) + " s)" +
                           (membership.repair ? "; carries out repair tasks for its copies" : ""));
  membership.registration = std::move(registration).value();
  return membership;
}

}  // namespace writ::cli
