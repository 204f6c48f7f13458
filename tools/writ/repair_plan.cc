#include "repair_plan.h"

#include <set>

#include "cluster/placement.h"
#include "cluster_query.h"
#include "common/printable.h"
#include "store/durable_store.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

bool Offers(const cluster::Member& m, std::string_view retention) {
  for (const std::string& c : m.retention) {
    if (c == retention) return true;
  }
  return false;
}

// Sends the copy in `store` to the placed members that lack one.
cluster::ReplicatedOutcome SendHeldCopy(const store::IndexRow& row, store::DurableStore& store,
                                        RepairPlan plan, const RepairRequest& request) {
  cluster::ReplicatedSendOptions o;
  o.k = request.k;
  o.replica_retention = request.replica;
  o.order = std::move(plan.others);
  o.existing = std::move(plan.held);
  o.base.id = row.id;
  o.base.rule = row.rule;
  o.base.chunk_size = row.chunk_size;
  o.base.digest = row.digest;
  o.base.stall_timeout = std::chrono::seconds(10);
  return cluster::SendReplicated(store.dir() + "/" + row.location, o);
}

}  // namespace

RepairPlan PlanRepair(const RepairRequest& request, std::vector<cluster::Member> members,
                      std::ostream& out) {
  RepairPlan plan;
  std::set<std::string> domains, keys;
  const std::string replica(RetentionName(request.replica));
  for (cluster::Member& m : cluster::PlacementOrder(request.id, std::move(members))) {
    CopyReport copy = AskMember(m, request.id, request.identity);
    const bool counts = copy.retained && copy.retention == replica &&
                        domains.count(m.domain) == 0 && keys.count(m.public_key) == 0;
    out << Printable(request.id) << ": " << Printable(m.address) << " (domain "
        << Printable(m.domain) << "): " << Printable(copy.state)
        << (copy.retained && !counts ? ", not counted" : "") << '\n';
    if (counts) {
      domains.insert(m.domain);
      keys.insert(m.public_key);
      plan.held.push_back(*copy.retained);
      plan.holders.push_back(std::move(m));
    } else if (!copy.retained && Offers(m, replica)) {
      plan.others.push_back({m.address, m.public_key, m.domain});
    }
  }
  return plan;
}

Result<receipt::ReplicatedCertificate> CertificateOf(const RepairRequest& request,
                                                     RepairPlan plan) {
  if (plan.held.size() < request.k) {
    return Status::Retention(request.id + ": " + std::to_string(plan.held.size()) + " of " +
                             std::to_string(request.k) + " copies counted");
  }
  plan.held.resize(request.k);
  return receipt::MakeCertificate(std::move(plan.held));
}

Result<receipt::ReplicatedCertificate> RepairFromDataDir(const RepairRequest& request,
                                                         const std::string& data_dir,
                                                         const cluster::EtcdClient& etcd,
                                                         std::ostream& out) {
  auto members = cluster::ListMembers(etcd);
  if (!members.ok()) return members.status().Annotate("--cluster");
  RepairPlan plan = PlanRepair(request, std::move(members).value(), out);
  if (plan.held.size() >= request.k) {
    out << Printable(request.id) << ": already " << request.k << " counted copies; nothing sent\n";
    return CertificateOf(request, std::move(plan));
  }
  store::DurableOptions options;
  options.read_only = true;
  auto store = store::DurableStore::Open(data_dir, options);
  if (!store.ok()) {
    return Status::InvalidArgument("cannot open the data directory " + data_dir + ": " +
                                   store.status().message());
  }
  auto row = (*store)->Find(request.id);
  if (!row.ok()) return row.status();
  if (!*row || !(*row)->region_lengths.empty()) {
    return Status::Retention(request.id + ": " + std::to_string(plan.held.size()) + " of " +
                             std::to_string(request.k) + " copies held, and " + data_dir +
                             " holds no plain copy to send from");
  }
  cluster::ReplicatedOutcome outcome = SendHeldCopy(**row, **store, std::move(plan), request);
  for (const cluster::ReplicaResult& r : outcome.replicas) {
    out << Printable(request.id) << ": sent to " << Printable(r.target.address) << ": "
        << (r.counted ? "retained, counted" : "not counted: " + Printable(r.why_not)) << '\n';
  }
  if (!outcome.status.ok()) return outcome.status;
  return *outcome.certificate;
}

}  // namespace writ::cli
