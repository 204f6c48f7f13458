// writ repair: restores K copies of replicated deliveries. Run on the host of a receiver
// that holds a copy: it asks every live member what it holds (in placement order), and
// for a delivery with fewer than K counted copies sends the payload from that receiver's
// data directory (read-only) to the next placed receivers with `writ send`'s replicated
// path, each copy validated at its destination; then writes a new certificate.
#include <fstream>
#include <iostream>
#include <set>

#include "cluster/placement.h"
#include "cluster/replicated_send.h"
#include "cluster_query.h"
#include "command.h"
#include "common/hex.h"
#include "common/printable.h"
#include "store/durable_store.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

struct RepairFlags {
  std::vector<std::string> ids;  // empty: every delivery in --data
  std::string cluster;
  std::string retention = "replicated:2";
  std::string replica_retention = "power-loss";
  std::string data;
  std::string certificates = ".";  // ID.cert files go here
  std::string identity;
};

struct RepairPlan {
  std::vector<Receipt> held;                   // counted copies: distinct keys and domains
  std::vector<cluster::ReplicaTarget> others;  // members without a counted copy, in order
};

RepairPlan PlanRepair(const std::string& id, std::vector<cluster::Member> members,
                      const RepairFlags& f) {
  RepairPlan plan;
  std::set<std::string> domains, keys;
  for (const cluster::Member& m : cluster::PlacementOrder(id, std::move(members))) {
    CopyReport copy = AskMember(m, id, f.identity);
    const bool counts = copy.retained && copy.retention == f.replica_retention &&
                        domains.count(m.domain) == 0 && keys.count(m.public_key) == 0;
    std::cout << Printable(id) << ": " << Printable(m.address) << " (domain " << Printable(m.domain)
              << "): " << Printable(copy.state) << (copy.retained && !counts ? ", not counted" : "")
              << '\n';
    if (counts) {
      domains.insert(m.domain);
      keys.insert(m.public_key);
      plan.held.push_back(*copy.retained);
    } else if (!copy.retained) {
      bool offers = false;
      for (const std::string& c : m.retention) offers |= c == f.replica_retention;
      if (offers) plan.others.push_back({m.address, m.public_key, m.domain});
    }
  }
  return plan;
}

Status WriteCertificate(const RepairFlags& f, const receipt::ReplicatedCertificate& c) {
  const std::string path = f.certificates + "/" + c.delivery.id + ".cert";
  std::ofstream out(path);
  out << receipt::CertificateToJson(c) << '\n';
  if (!out) return Status::Io("cannot write the certificate to " + path);
  std::cout << Printable(c.delivery.id) << ": " << receipt::ReplicatedRetentionName(c.k)
            << " certificate written to " << Printable(path) << '\n';
  return Status::Ok();
}

// Sends the copy this host holds to the placed receivers that lack one.
cluster::ReplicatedOutcome Restore(const store::IndexRow& row, store::DurableStore& store,
                                   RepairPlan plan, uint32_t k, RetentionClass replica) {
  cluster::ReplicatedSendOptions o;
  o.k = k;
  o.replica_retention = replica;
  o.order = std::move(plan.others);
  o.existing = std::move(plan.held);
  o.base.id = row.id;
  o.base.rule = row.rule;
  o.base.chunk_size = row.chunk_size;
  o.base.digest = row.digest;
  o.base.stall_timeout = std::chrono::seconds(10);
  return cluster::SendReplicated(store.dir() + "/" + row.location, o);
}

Status RepairOne(const std::string& id, store::DurableStore& store, uint32_t k,
                 RetentionClass replica, const RepairFlags& f, const cluster::EtcdClient& etcd) {
  auto members = cluster::ListMembers(etcd);
  if (!members.ok()) return members.status().Annotate("--cluster");
  RepairPlan plan = PlanRepair(id, std::move(members).value(), f);
  if (plan.held.size() >= k) {
    plan.held.resize(k);
    std::cout << Printable(id) << ": already " << k << " counted copies; nothing sent\n";
    return WriteCertificate(f, receipt::MakeCertificate(std::move(plan.held)));
  }
  auto row = store.Find(id);
  if (!row.ok()) return row.status();
  if (!*row || !(*row)->region_lengths.empty()) {
    return Status::Retention(id + ": " + std::to_string(plan.held.size()) + " of " +
                             std::to_string(k) + " copies held, and " + store.dir() +
                             " holds no plain copy to send from");
  }
  cluster::ReplicatedOutcome outcome = Restore(**row, store, std::move(plan), k, replica);
  for (const cluster::ReplicaResult& r : outcome.replicas) {
    std::cout << Printable(id) << ": sent to " << Printable(r.target.address) << ": "
              << (r.counted ? "retained, counted" : "not counted: " + Printable(r.why_not)) << '\n';
  }
  if (!outcome.status.ok()) return outcome.status;
  return WriteCertificate(f, *outcome.certificate);
}

int RunRepair(RepairFlags f) {
  auto k = receipt::ParseReplicatedRetention(f.retention);
  if (!k.ok()) return ReportError(k.status().Annotate("--retention"));
  auto replica = ParseRetention(f.replica_retention);
  if (!replica.ok()) return ReportError(replica.status().Annotate("--replica-retention"));
  auto etcd = cluster::EtcdClient::Open(f.cluster);
  if (!etcd.ok()) return ReportError(etcd.status());
  store::DurableOptions options;
  options.read_only = true;
  auto store = store::DurableStore::Open(f.data, options);
  if (!store.ok()) {
    return ReportError(Status::InvalidArgument("cannot open the data directory " + f.data + ": " +
                                               store.status().message()));
  }
  if (f.ids.empty()) {
    auto rows = (*store)->List();
    if (!rows.ok()) return ReportError(rows.status());
    for (const store::IndexRow& row : *rows) f.ids.push_back(row.id);
  }
  Status worst = Status::Ok();
  for (const std::string& id : f.ids) {
    Status s = RepairOne(id, **store, *k, *replica, f, *etcd);
    if (!s.ok()) {
      std::cerr << "writ: " << Printable(s.message()) << '\n';
      if (worst.ok() || s.code() == ErrorCode::kTransport) worst = s;
    }
  }
  return worst.ok() ? kExitOk : ExitCodeFor(worst);
}

void RegisterRepair(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<RepairFlags>();
  CLI::App* cmd = app.add_subcommand(
      "repair",
      "Restore K copies of replicated deliveries, sending from this host's receiver's data "
      "directory to the next placed receivers; writes a new certificate per delivery");
  cmd->add_option("ID", f->ids, "delivery ids; default: every delivery in --data");
  cmd->add_option("--cluster", f->cluster, "etcd client URL, http://HOST:PORT")->required();
  cmd->add_option("--data", f->data,
                  "the data directory of a receiver on this host that holds a copy (opened "
                  "read-only; its serve may be running)")
      ->required();
  cmd->add_option("--retention", f->retention, "replicated:K: how many copies to restore")
      ->capture_default_str();
  cmd->add_option("--replica-retention", f->replica_retention,
                  "the class a copy must be retained in to count, and new copies are sent with")
      ->capture_default_str();
  cmd->add_option("--certificates", f->certificates, "directory for the new certificates, ID.cert")
      ->capture_default_str();
  cmd->add_option("--identity", f->identity, "sign the queries with the identity in DIR");
  cmd->callback([f, &ctx] { ctx.exit_code = RunRepair(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(77, RegisterRepair);

}  // namespace writ::cli
