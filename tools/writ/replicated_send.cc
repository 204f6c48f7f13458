#include "replicated_send.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "receipt/certificate.h"
#include "writ/replicated.h"
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

json ReplicaJson(const ReplicaReport& r, const SendOptions& options) {
  json j{{"address", r.address}, {"counted", r.counted}};
  if (!r.why_not.empty()) j["why_not"] = r.why_not;
  auto outcome = json::parse(OutcomeToJson(r.outcome, options), nullptr, false);
  if (!outcome.is_discarded()) j["outcome"] = std::move(outcome);
  return j;
}

void PrintText(const ReplicatedDelivery& o, uint32_t k, const std::string& retention) {
  for (const ReplicaReport& r : o.replicas) {
    std::cout << "replica " << Printable(r.address) << ": "
              << (r.counted ? "retained, counted" : "not counted: " + Printable(r.why_not));
    for (const Receipt& receipt : r.outcome.receipts) {
      if (receipt.rung == ReceiptRung::kRetained && receipt.failure_domain && receipt.signature)
        std::cout << " (domain " << Printable(*receipt.failure_domain) << ", key "
                  << receipt.signature->key_id << ")";
    }
    std::cout << '\n';
  }
  if (!o.certificate_json.empty())
    std::cout << retention << " reached: " << k
              << " retained receipts from distinct keys in distinct failure domains\n";
}

Status WriteOutputs(const ReplicatedSendRequest& req, const ReplicatedDelivery& o) {
  if (!req.certificate.empty() && !o.certificate_json.empty()) {
    std::ofstream out(req.certificate);
    out << o.certificate_json << '\n';
    if (!out) return Status::Io("cannot write the certificate to " + req.certificate);
  }
  if (!req.evidence.empty()) {
    // One writ.evidence/1 bundle: every replica's evidence and promise, and the certificate.
    std::ofstream out(req.evidence);
    out << ReplicatedEvidenceBundle(o);
    if (!out) return Status::Io("cannot write evidence to " + req.evidence);
  }
  return Status::Ok();
}

Status BuildReplicated(const ReplicatedSendRequest& req, ReplicatedSendOptions& o) {
  if (req.to.empty() == req.cluster.empty())
    return Status::InvalidArgument(req.retention + " needs exactly one of --cluster or --to");
  WRIT_ASSIGN_OR_RETURN(o.k, receipt::ParseReplicatedRetention(req.retention));
  auto replica = ParseRetention(req.replica_retention);
  if (!replica.ok())
    return Status::InvalidArgument("--replica-retention: " + replica.status().message());
  o.replica_retention = *replica;
  o.base = req.options;
  if (req.file == "-") return Status::InvalidArgument("replicated:K sends a file, not stdin");
  if (req.stall_seconds == 0)
    return Status::InvalidArgument("--replica-stall-timeout: at least 1 second");
  o.base.stall_timeout = std::chrono::seconds(req.stall_seconds);
  o.cluster = req.cluster;
  o.receivers = SplitCommas(req.to);
  return Status::Ok();
}

}  // namespace

bool IsReplicatedRetention(const std::string& retention) {
  return retention.rfind("replicated:", 0) == 0;
}

int RunReplicatedSend(const ReplicatedSendRequest& req) {
  ReplicatedSendOptions o;
  if (Status s = BuildReplicated(req, o); !s.ok()) return ReportError(s);
  const ReplicatedDelivery outcome = SendReplicated(req.file, o);
  if (req.json) {
    json doc{{"retention", req.retention}, {"reached", !outcome.certificate_json.empty()}};
    json replicas = json::array();
    for (const auto& r : outcome.replicas) replicas.push_back(ReplicaJson(r, o.base));
    doc["replicas"] = std::move(replicas);
    if (!outcome.certificate_json.empty())
      doc["certificate"] = json::parse(outcome.certificate_json);
    if (!outcome.status.ok()) doc["error"] = outcome.status.message();
    std::cout << doc.dump(2) << std::endl;
  } else {
    PrintText(outcome, o.k, req.retention);
  }
  if (Status written = WriteOutputs(req, outcome); !written.ok()) return ReportError(written);
  if (!outcome.status.ok()) return ReportError(outcome.status);
  return kExitOk;
}

}  // namespace writ::cli
