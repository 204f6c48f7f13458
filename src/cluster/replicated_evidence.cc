// writ::ReplicatedEvidenceBundle: the replicas' own bundles (OutcomeToEvidenceBundle)
// merged into one about the one delivery, with the certificate the replicated claims are
// drawn from.
#include <nlohmann/json.hpp>

#include "writ/replicated.h"

namespace writ {
namespace {

using ordered = nlohmann::ordered_json;

constexpr const char* kReplicatedClaimKinds[] = {"deliveries_transferred", "placed", "notified",
                                                 "validated", "processed"};

struct ReplicaBundle {
  const ReplicaReport* report;
  ordered doc;
  std::string prefix;  // of its work request ids: "replica-N/"
};

void AppendAll(ordered& to, const ordered& from, const char* key) {
  if (!from.contains(key)) return;
  for (const ordered& e : from[key]) to.push_back(e);
}

// A wr_id field of `e`, prefixed so that two replicas' work requests never share an id.
ordered Prefixed(ordered e, const char* field, const std::string& prefix) {
  if (e.contains(field) && e[field].is_string()) e[field] = prefix + e[field].get<std::string>();
  return e;
}

bool Claims(const ordered& bundle, const std::string& kind) {
  for (const ordered& c : bundle["claims"])
    if (c["kind"] == kind) return true;
  return false;
}

ordered ReplicatedPromise(const std::string& id, const ordered& cert) {
  const std::string k = std::to_string(cert["k"].get<uint32_t>());
  return {{"delivery", id},
          {"acknowledged_point",
           k + " retained receipts from " + k + " distinct receiver keys in " + k +
               " distinct signed failure domains (the certificate's members), each issued "
               "after its receiver made the delivery durable"},
          {"survives", cert["retention"]},
          {"promise_after_failure", "the delivery stays readable from a remaining receiver after " +
                                        cert["survives"].get<std::string>()},
          {"evidence", cert["statement"].get<std::string>() +
                           "; not established: " + cert["does_not_establish"].get<std::string>()},
          {"medium", "replicas"}};
}

class Merge {
 public:
  explicit Merge(const ReplicatedDelivery& d) {
    for (size_t i = 0; i < d.replicas.size(); ++i) {
      ordered doc = ordered::parse(OutcomeToEvidenceBundle(d.replicas[i].outcome), nullptr, false);
      if (doc.is_discarded()) continue;
      replicas_.push_back(
          {&d.replicas[i], std::move(doc), "replica-" + std::to_string(i + 1) + "/"});
    }
    if (!d.certificate_json.empty()) cert_ = ordered::parse(d.certificate_json, nullptr, false);
  }

  ordered Bundle() {
    ordered out{{"schema", "writ.evidence/1"}, {"context", nullptr}};
    ordered deliveries = ordered::array(), wcs = ordered::array(), placement = ordered::array(),
            notes = ordered::array(), acks = ordered::array(), promises = ordered::array();
    ordered portions = ordered::array();
    for (const ReplicaBundle& r : replicas_) {
      const bool counted = r.report->counted;
      if (out["context"].is_null() || (counted && !context_from_counted_)) {
        out["context"] = r.doc["context"];
        context_from_counted_ = counted;
      }
      for (const ordered& wc : r.doc["work_completions"])
        wcs.push_back(Prefixed(wc, "wr_id", r.prefix));
      AppendAll(acks, r.doc, "acknowledgements");
      AppendAll(promises, r.doc, "retention_promises");
      if (!counted) continue;
      for (const ordered& p : r.doc["deliveries"][0]["portions"])
        portions.push_back(Prefixed(p, "wr_id", r.prefix));
      for (const ordered& n : r.doc["notifications"])
        notes.push_back(Prefixed(n, "portion", r.prefix));
      if (!r.doc["placement"].empty() && placement.empty()) placement = r.doc["placement"];
    }
    if (!replicas_.empty()) {
      const ordered& first = replicas_.front().doc["deliveries"][0];
      deliveries.push_back(
          {{"id", first["id"]}, {"bytes", first["bytes"]}, {"portions", portions}});
    }
    if (cert_.is_object() && !deliveries.empty())
      promises.push_back(ReplicatedPromise(deliveries[0]["id"], cert_));
    out["deliveries"] = std::move(deliveries);
    out["work_completions"] = std::move(wcs);
    out["placement"] = std::move(placement);
    out["notifications"] = std::move(notes);
    out["acknowledgements"] = std::move(acks);
    out["retention_promises"] = std::move(promises);
    out["claims"] = ClaimsOf(out);
    AddReplicas(out);
    if (cert_.is_object()) out["certificate"] = cert_;
    return out;
  }

 private:
  ordered ClaimsOf(const ordered& bundle) const {
    ordered claims = ordered::array();
    auto claim = [&](ordered c) {
      c["id"] = "c" + std::to_string(claims.size() + 1);
      claims.push_back(std::move(c));
    };
    uint64_t successes = 0;
    for (const ordered& wc : bundle["work_completions"]) successes += wc["status"] == "success";
    claim({{"kind", "work_requests_succeeded"},
           {"count", successes},
           {"text", std::to_string(successes) + " write work requests completed with success"}});
    if (!cert_.is_object() || bundle["deliveries"].empty()) return claims;
    const ordered& id = bundle["deliveries"][0]["id"];
    for (const char* kind : kReplicatedClaimKinds) {
      bool all = true;
      for (const ReplicaBundle& r : replicas_)
        if (r.report->counted) all = all && Claims(r.doc, kind);
      if (!all) continue;
      if (std::string(kind) == "deliveries_transferred")
        claim({{"kind", kind}, {"count", 1}, {"text", "1 logical delivery transferred"}});
      else
        claim({{"kind", kind},
               {"delivery", id},
               {"text", std::string(kind) + " at every counted replica"}});
    }
    const uint32_t k = cert_["k"].get<uint32_t>();
    claim({{"kind", "durable"},
           {"delivery", id},
           {"survives", cert_["retention"]},
           {"text", "the delivery survives " + cert_["retention"].get<std::string>()}});
    claim({{"kind", "copies"},
           {"delivery", id},
           {"count", k},
           {"text", std::to_string(k) + " copies in distinct failure domains"}});
    return claims;
  }

  // Every replica's receipts in "receipts", and which of them are each replica's.
  void AddReplicas(ordered& out) const {
    ordered receipts = ordered::array(), replicas = ordered::array();
    for (const ReplicaBundle& r : replicas_) {
      ordered indices = ordered::array();
      for (const ordered& receipt : r.doc["receipts"]) {
        indices.push_back(receipts.size());
        receipts.push_back(receipt);
      }
      ordered entry{{"address", r.report->address}, {"counted", r.report->counted}};
      if (!r.report->why_not.empty()) entry["why_not"] = r.report->why_not;
      entry["work_request_prefix"] = r.prefix;
      entry["receipts"] = std::move(indices);
      replicas.push_back(std::move(entry));
    }
    out["receipts"] = std::move(receipts);
    out["replicas"] = std::move(replicas);
  }

  std::vector<ReplicaBundle> replicas_;
  ordered cert_;
  bool context_from_counted_ = false;
};

}  // namespace

std::string ReplicatedEvidenceBundle(const ReplicatedDelivery& delivery) {
  return Merge(delivery).Bundle().dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
}

}  // namespace writ
