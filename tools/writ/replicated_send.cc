#include "replicated_send.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cluster/member.h"
#include "cluster/placement.h"
#include "cluster/replicated_send.h"
#include "command.h"
#include "common/printable.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

using nlohmann::json;

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string DeliveryIdOf(const ReplicatedSendRequest& r) {
  if (!r.options.id.empty()) return r.options.id;
  const size_t slash = r.file.find_last_of('/');
  return slash == std::string::npos ? r.file : r.file.substr(slash + 1);
}

// The receivers to try, best first: placed from etcd's live members that offer the
// replica class, or the --to list as given.
Result<std::vector<cluster::ReplicaTarget>> Targets(const ReplicatedSendRequest& r) {
  std::vector<cluster::ReplicaTarget> out;
  if (!r.to.empty()) {
    for (const std::string& address : SplitCommas(r.to)) out.push_back({address, "", ""});
    return out;
  }
  WRIT_ASSIGN_OR_RETURN(cluster::EtcdClient etcd, cluster::EtcdClient::Open(r.cluster));
  auto members = cluster::ListMembers(etcd);
  if (!members.ok()) return members.status().Annotate("--cluster");
  std::vector<cluster::Member> offering;
  for (cluster::Member& m : *members) {
    for (const std::string& c : m.retention)
      if (c == r.replica_retention) offering.push_back(m);
  }
  for (cluster::Member& m : cluster::PlacementOrder(DeliveryIdOf(r), std::move(offering)))
    out.push_back({m.address, m.public_key, m.domain});
  return out;
}

json ReplicaJson(const cluster::ReplicaResult& r, const SendOptions& options) {
  json j{{"address", r.target.address}, {"counted", r.counted}};
  if (!r.why_not.empty()) j["why_not"] = r.why_not;
  auto outcome = json::parse(OutcomeToJson(r.outcome, options), nullptr, false);
  if (!outcome.is_discarded()) j["outcome"] = std::move(outcome);
  return j;
}

void PrintText(const cluster::ReplicatedOutcome& o, const std::string& retention) {
  for (const cluster::ReplicaResult& r : o.replicas) {
    std::cout << "replica " << Printable(r.target.address) << ": "
              << (r.counted ? "retained, counted" : "not counted: " + Printable(r.why_not));
    for (const Receipt& receipt : r.outcome.receipts) {
      if (receipt.rung == ReceiptRung::kRetained && receipt.failure_domain && receipt.signature)
        std::cout << " (domain " << Printable(*receipt.failure_domain) << ", key "
                  << receipt.signature->key_id << ")";
    }
    std::cout << '\n';
  }
  if (o.certificate)
    std::cout << retention << " reached: " << o.certificate->k
              << " retained receipts from distinct keys in distinct failure domains\n";
}

Status WriteOutputs(const ReplicatedSendRequest& req, const cluster::ReplicatedOutcome& o) {
  if (!req.certificate.empty() && o.certificate) {
    std::ofstream out(req.certificate);
    out << receipt::CertificateToJson(*o.certificate) << '\n';
    if (!out) return Status::Io("cannot write the certificate to " + req.certificate);
  }
  if (!req.evidence.empty()) {
    // One writ.evidence/1 bundle per replica tried: every replica's promise, as it stands.
    json bundles = json::array();
    for (const cluster::ReplicaResult& r : o.replicas)
      bundles.push_back(json::parse(OutcomeToEvidenceBundle(r.outcome), nullptr, false));
    std::ofstream out(req.evidence);
    out << bundles.dump(2) << '\n';
    if (!out) return Status::Io("cannot write evidence to " + req.evidence);
  }
  return Status::Ok();
}

Status BuildReplicated(const ReplicatedSendRequest& req, cluster::ReplicatedSendOptions& o) {
  if (req.to.empty() == req.cluster.empty())
    return Status::InvalidArgument(req.retention + " needs exactly one of --cluster or --to");
  WRIT_ASSIGN_OR_RETURN(o.k, receipt::ParseReplicatedRetention(req.retention));
  auto replica = ParseRetention(req.replica_retention);
  if (!replica.ok())
    return Status::InvalidArgument("--replica-retention: " + replica.status().message());
  o.replica_retention = *replica;
  o.base = req.options;
  if (req.file == "-") return Status::InvalidArgument("replicated:K sends a file, not stdin");
  return Status::Ok();
}

}  // namespace

bool IsReplicatedRetention(const std::string& retention) {
  return retention.rfind("replicated:", 0) == 0;
}

int RunReplicatedSend(const ReplicatedSendRequest& req) {
  cluster::ReplicatedSendOptions o;
  if (Status s = BuildReplicated(req, o); !s.ok()) return ReportError(s);
  if (req.stall_seconds == 0)
    return ReportError(Status::InvalidArgument("--replica-stall-timeout: at least 1 second"));
  o.base.stall_timeout = std::chrono::seconds(req.stall_seconds);
  auto targets = Targets(req);
  if (!targets.ok()) return ReportError(targets.status());
  o.order = std::move(targets).value();
  const cluster::ReplicatedOutcome outcome = cluster::SendReplicated(req.file, o);
  if (req.json) {
    json doc{{"retention", req.retention}, {"reached", outcome.certificate != std::nullopt}};
    json replicas = json::array();
    for (const auto& r : outcome.replicas) replicas.push_back(ReplicaJson(r, o.base));
    doc["replicas"] = std::move(replicas);
    if (outcome.certificate)
      doc["certificate"] = json::parse(receipt::CertificateToJson(*outcome.certificate));
    if (!outcome.status.ok()) doc["error"] = outcome.status.message();
    std::cout << doc.dump(2) << std::endl;
  } else {
    PrintText(outcome, req.retention);
  }
  if (Status written = WriteOutputs(req, outcome); !written.ok()) return ReportError(written);
  if (!outcome.status.ok()) return ReportError(outcome.status);
  return kExitOk;
}

}  // namespace writ::cli
