// writ repair: restores K copies of replicated deliveries. With --data, on the host of a
// receiver that holds a copy: sends from that data directory (repair_plan.h). Without it,
// from any host: asks a receiver that holds a counted copy to send it, through a task in
// etcd that its serve's repair agent carries out (cluster/repair_task.h), then counts the
// copies itself (every member's retained receipt verified against the key it registered)
// and writes the new certificate.
#include <fstream>
#include <iostream>
#include <thread>

#include "cluster/repair_task.h"
#include "command.h"
#include "common/printable.h"
#include "repair_plan.h"
#include "store/durable_store.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

using namespace std::chrono_literals;

struct RepairFlags {
  std::vector<std::string> ids;  // empty: every delivery in --data
  std::string cluster;
  std::string retention = "replicated:2";
  std::string replica_retention = "power-loss";
  std::string data;                // empty: through a holder's serve
  std::string certificates = ".";  // ID.cert files go here
  std::string identity;
  int64_t claim_seconds =
      10;  // a holder's serve claims a task within this, or the next holder is asked
  int64_t wait_seconds = 600;  // for the holder's result once claimed
};

Status WriteCertificate(const RepairFlags& f, const receipt::ReplicatedCertificate& c) {
  const std::string path = f.certificates + "/" + c.delivery.id + ".cert";
  std::ofstream out(path);
  out << receipt::CertificateToJson(c) << '\n';
  if (!out) return Status::Io("cannot write the certificate to " + path);
  std::cout << Printable(c.delivery.id) << ": " << receipt::ReplicatedRetentionName(c.k)
            << " certificate written to " << Printable(path) << '\n';
  return Status::Ok();
}

// Polls until `key` is present (`want_present`) or absent; false when `limit` passed first.
Result<std::optional<cluster::KeyValue>> AwaitKey(const cluster::EtcdClient& etcd,
                                                  const std::string& key, bool want_present,
                                                  std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    WRIT_ASSIGN_OR_RETURN(auto kvs, etcd.Prefix(key));
    std::optional<cluster::KeyValue> found;
    for (cluster::KeyValue& kv : kvs) {
      if (kv.key == key) found = std::move(kv);
    }
    if (found.has_value() == want_present) return found;
    if (std::chrono::steady_clock::now() >= deadline) return Status::Timeout(key);
    std::this_thread::sleep_for(200ms);
  }
}

// Asks `holder`'s serve to send its copy; Ok once it answered (its lines printed), whatever
// it reached: the caller counts the copies afterwards.
Status AskHolder(const cluster::Member& holder, const RepairRequest& request, const RepairFlags& f,
                 const cluster::EtcdClient& etcd) {
  const std::string task_key = cluster::RepairTaskKey(holder.key_id, request.id);
  const std::string result_key = cluster::RepairResultKey(holder.key_id, request.id);
  WRIT_RETURN_IF_ERROR(etcd.Delete(result_key));  // an answer to an earlier request
  const cluster::RepairTask task{request.id, request.k,
                                 std::string(RetentionName(request.replica))};
  // The task lives under a lease: a requester that dies leaves nothing behind for long.
  WRIT_ASSIGN_OR_RETURN(int64_t lease, etcd.GrantLease(f.claim_seconds + 5));
  WRIT_RETURN_IF_ERROR(etcd.Put(task_key, cluster::RepairTaskToJson(task), lease));
  std::cout << Printable(request.id) << ": asked " << Printable(holder.address) << " (domain "
            << Printable(holder.domain) << ") to send its copy\n";
  auto claimed = AwaitKey(etcd, task_key, false, std::chrono::seconds(f.claim_seconds));
  if (!claimed.ok()) {
    auto withdrawn = etcd.Take(task_key);
    if (withdrawn.ok() && *withdrawn) {
      return Status::Timeout(holder.address + " did not take the task within " +
                             std::to_string(f.claim_seconds) +
                             " s (a serve without --data, or not running a repair agent)");
    }
    // Taken between the last look and the withdrawal: wait for its answer.
  }
  auto answered = AwaitKey(etcd, result_key, true, std::chrono::seconds(f.wait_seconds));
  if (!answered.ok()) return answered.status().Annotate("no answer from " + holder.address);
  (void)etcd.Delete(result_key);
  auto result = cluster::RepairResultFromJson((*answered)->value);
  if (!result.ok()) return result.status().Annotate(holder.address);
  for (const std::string& line : result->lines) {
    std::cout << "  " << Printable(holder.address) << ": " << Printable(line) << '\n';
  }
  if (!result->ok) {
    std::cout << "  " << Printable(holder.address) << ": " << Printable(result->error) << '\n';
  }
  return Status::Ok();
}

Result<receipt::ReplicatedCertificate> RepairThroughHolders(const RepairRequest& request,
                                                            const RepairFlags& f,
                                                            const cluster::EtcdClient& etcd) {
  auto members = cluster::ListMembers(etcd);
  if (!members.ok()) return members.status().Annotate("--cluster");
  RepairPlan plan = PlanRepair(request, *members, std::cout);
  if (plan.held.size() >= request.k) {
    std::cout << Printable(request.id) << ": already " << request.k
              << " counted copies; nothing sent\n";
    return CertificateOf(request, std::move(plan));
  }
  if (plan.holders.empty()) {
    return Status::Retention(request.id + ": no live member holds a counted copy to repair from");
  }
  for (const cluster::Member& holder : plan.holders) {
    Status asked = AskHolder(holder, request, f, etcd);
    if (asked.code() == ErrorCode::kTransport) return asked;
    if (!asked.ok()) {
      std::cout << Printable(request.id) << ": " << Printable(asked.message()) << '\n';
      continue;
    }
    // Counted again from the members' own answers, not from the holder's report.
    members = cluster::ListMembers(etcd);
    if (!members.ok()) return members.status().Annotate("--cluster");
    plan = PlanRepair(request, std::move(members).value(), std::cout);
    if (plan.held.size() >= request.k) break;
  }
  return CertificateOf(request, std::move(plan));
}

int RunRepair(RepairFlags f) {
  auto k = receipt::ParseReplicatedRetention(f.retention);
  if (!k.ok()) return ReportError(k.status().Annotate("--retention"));
  auto replica = ParseRetention(f.replica_retention);
  if (!replica.ok()) return ReportError(replica.status().Annotate("--replica-retention"));
  auto etcd = cluster::EtcdClient::Open(f.cluster);
  if (!etcd.ok()) return ReportError(etcd.status());
  if (f.ids.empty()) {
    if (f.data.empty())
      return ReportError(Status::InvalidArgument("name the ids to repair, or --data"));
    store::DurableOptions options;
    options.read_only = true;
    auto store = store::DurableStore::Open(f.data, options);
    if (!store.ok()) {
      return ReportError(Status::InvalidArgument("cannot open the data directory " + f.data + ": " +
                                                 store.status().message()));
    }
    auto rows = (*store)->List();
    if (!rows.ok()) return ReportError(rows.status());
    for (const store::IndexRow& row : *rows) f.ids.push_back(row.id);
  }
  Status worst = Status::Ok();
  for (const std::string& id : f.ids) {
    const RepairRequest request{id, *k, *replica, f.identity};
    auto cert = f.data.empty() ? RepairThroughHolders(request, f, *etcd)
                               : RepairFromDataDir(request, f.data, *etcd, std::cout);
    Status s = cert.ok() ? WriteCertificate(f, *cert) : cert.status();
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
      "Restore K copies of replicated deliveries: a receiver that holds a copy sends it to the "
      "next placed receivers; writes a new certificate per delivery");
  cmd->add_option("ID", f->ids, "delivery ids; default (with --data): every delivery in --data");
  cmd->add_option("--cluster", f->cluster, "etcd client URL, http://HOST:PORT")->required();
  cmd->add_option("--data", f->data,
                  "send from the data directory of a receiver on this host (opened read-only; "
                  "its serve may be running); default: ask a holder's serve to send its copy");
  cmd->add_option("--retention", f->retention, "replicated:K: how many copies to restore")
      ->capture_default_str();
  cmd->add_option("--replica-retention", f->replica_retention,
                  "the class a copy must be retained in to count, and new copies are sent with")
      ->capture_default_str();
  cmd->add_option("--certificates", f->certificates, "directory for the new certificates, ID.cert")
      ->capture_default_str();
  cmd->add_option("--identity", f->identity, "sign the queries with the identity in DIR");
  cmd->add_option("--claim-timeout", f->claim_seconds,
                  "without --data: seconds a holder's serve has to take the task before the next "
                  "holder is asked")
      ->capture_default_str();
  cmd->add_option("--wait", f->wait_seconds,
                  "without --data: seconds to wait for a holder's answer once it took the task")
      ->capture_default_str();
  cmd->callback([f, &ctx] { ctx.exit_code = RunRepair(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(77, RegisterRepair);

}  // namespace writ::cli
