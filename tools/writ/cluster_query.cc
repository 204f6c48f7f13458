#include "cluster_query.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "cluster/member.h"
#include "cluster/placement.h"
#include "command.h"
#include "common/printable.h"
#include "writ/query.h"
#include "writ/receipt.h"

namespace writ::cli {
CopyReport AskMember(const cluster::Member& m, const std::string& id, const std::string& identity) {
  CopyReport report{m, "absent", "", std::nullopt};
  QueryOptions options;
  options.to = m.address;
  options.identity_dir = identity;
  options.connect_timeout = std::chrono::seconds(5);
  options.answer_timeout = std::chrono::seconds(10);
  auto held = QueryDelivery(id, options);
  if (!held.ok()) {
    report.state = "unreachable: " + held.status().message();
    return report;
  }
  if (!held->retained) return report;
  for (const std::string& text : held->receipts) {
    auto r = ReceiptFromJson(text);
    if (!r.ok() || r->rung != ReceiptRung::kRetained) continue;
    Status s = VerifyReceipt(*r, m.public_key);
    if (!s.ok()) {
      report.state = "receipt invalid: " + s.message();
      return report;
    }
    if (!r->failure_domain || *r->failure_domain != m.domain) {
      report.state = "receipt does not sign domain " + m.domain;
      return report;
    }
    report.state = "retained";
    report.retention = held->retention;
    report.retained = std::move(r).value();
    return report;
  }
  report.state = "no retained receipt in the answer";
  return report;
}

int RunClusterQuery(const ClusterQueryRequest& req) {
  auto etcd = cluster::EtcdClient::Open(req.cluster);
  if (!etcd.ok()) return ReportError(etcd.status());
  auto members = cluster::ListMembers(*etcd);
  if (!members.ok()) return ReportError(members.status().Annotate("--cluster"));
  size_t held = 0;
  nlohmann::json copies = nlohmann::json::array();
  for (const cluster::Member& m : cluster::PlacementOrder(req.id, std::move(members).value())) {
    CopyReport r = AskMember(m, req.id, req.identity);
    if (r.state == "retained") ++held;
    copies.push_back({{"address", m.address},
                      {"domain", m.domain},
                      {"key_id", m.key_id},
                      {"state", r.state},
                      {"retention", r.retention}});
    if (!req.json) {
      std::cout << Printable(m.address) << "  domain " << Printable(m.domain) << "  "
                << Printable(r.state)
                << (r.retention.empty() ? "" : " (" + Printable(r.retention) + ")") << '\n';
    }
  }
  if (req.json) {
    std::cout << nlohmann::json{{"id", req.id}, {"copies", copies}, {"held", held}}.dump(2)
              << std::endl;
  } else {
    std::cout << Printable(req.id) << ": " << held << " retained cop" << (held == 1 ? "y" : "ies")
              << " among " << copies.size() << " live member(s), in placement order\n";
  }
  return held > 0 ? kExitOk : kExitNotFound;
}

}  // namespace writ::cli
