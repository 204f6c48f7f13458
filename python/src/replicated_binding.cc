// _writ.send_replicated: writ::SendReplicated (include/writ/replicated.h) for Python's
// writ.send_replicated (python/writ/_replicated.py). The copies go out with the GIL
// released; the answer is (code, message, document) with the document as JSON: every
// replica tried, the certificate, and the evidence bundle (docs/python.md).
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "writ/replicated.h"
#include "writ/vocabulary.h"

namespace writ::python {
namespace {

using nlohmann::json;

struct ReplicatedRequest {
  std::string path;
  std::string id;
  uint32_t k = 2;
  std::string replica_retention;
  std::string cluster;
  std::vector<std::string> receivers;
  std::string provider;
  std::string identity;
  std::string rule;
  uint64_t chunk_size = 0;
  double stall_timeout_s = 10;
};

Result<ReplicatedSendOptions> OptionsOf(const ReplicatedRequest& r) {
  ReplicatedSendOptions o;
  o.k = r.k;
  o.cluster = r.cluster;
  o.receivers = r.receivers;
  auto retention = ParseRetention(r.replica_retention);
  if (!retention.ok()) return retention.status().Annotate("replica_retention");
  o.replica_retention = *retention;
  auto rule = ParseRule(r.rule);
  if (!rule.ok()) return rule.status().Annotate("rule");
  o.base.rule = *rule;
  o.base.id = r.id;
  o.base.provider = r.provider;
  o.base.identity_dir = r.identity;
  o.base.chunk_size = r.chunk_size;
  if (r.stall_timeout_s <= 0) return Status::InvalidArgument("stall_timeout: above 0 seconds");
  o.base.stall_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(r.stall_timeout_s * 1000.0));
  return o;
}

std::string DocumentOf(const ReplicatedDelivery& d, const SendOptions& base) {
  json replicas = json::array();
  for (const ReplicaReport& r : d.replicas) {
    json entry{{"address", r.address}, {"counted", r.counted}, {"why_not", r.why_not}};
    entry["outcome"] = json::parse(OutcomeToJson(r.outcome, base), nullptr, false);
    replicas.push_back(std::move(entry));
  }
  json doc{{"replicas", std::move(replicas)},
           {"certificate", d.certificate_json.empty() ? json() : json::parse(d.certificate_json)},
           {"evidence", json::parse(ReplicatedEvidenceBundle(d))}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

py::tuple SendReplicatedFromPython(const ReplicatedRequest& request) {
  auto options = OptionsOf(request);
  if (!options.ok()) return Answer(options.status());
  std::string document;
  Status status;
  {
    py::gil_scoped_release nogil;
    const ReplicatedDelivery sent = SendReplicated(request.path, *options);
    status = sent.status;
    // Refused before any replica was tried (bad options, etcd unreachable): nothing to show.
    if (!sent.replicas.empty() || status.ok()) document = DocumentOf(sent, options->base);
  }
  return py::make_tuple(std::string(ErrorCodeName(status.code())), status.message(),
                        document.empty() ? py::object(py::none()) : py::cast(document));
}

}  // namespace

void BindReplicated(py::module_& m) {
  m.def(
      "send_replicated",
      [](const std::string& path, const std::string& id, uint32_t k,
         const std::string& replica_retention, const std::string& cluster,
         const std::vector<std::string>& receivers, const std::string& provider,
         const std::string& identity, const std::string& rule, uint64_t chunk_size,
         double stall_timeout) {
        return SendReplicatedFromPython({path, id, k, replica_retention, cluster, receivers,
                                         provider, identity, rule, chunk_size, stall_timeout});
      },
      py::arg("path"), py::arg("id"), py::arg("k"), py::arg("replica_retention"),
      py::arg("cluster"), py::arg("receivers"), py::arg("provider"), py::arg("identity"),
      py::arg("rule"), py::arg("chunk_size"), py::arg("stall_timeout"));
}

}  // namespace writ::python
