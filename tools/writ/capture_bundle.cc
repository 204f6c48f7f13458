#include "capture_bundle.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "capture_observed.h"

namespace writ::cli {
namespace capture {

std::string Time(uint64_t ns) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000u);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%09lluZ", text,
                static_cast<unsigned long long>(ns % 1000000000u));
  return out;
}

bool IsReceive(const std::string& op) { return op == "recv" || op == "tagged_recv"; }

std::string ContextOperation(const std::string& op) {
  if (op == "write" || op == "inject_write") return "rdma_write";
  if (op == "writedata" || op == "inject_writedata") return "rdma_write_with_imm";
  if (IsReceive(op)) return "";
  if (op == "read" || op == "atomic" || op == "local" || op == "other") return "other";
  return "send";
}

}  // namespace capture

namespace {

using capture::CaptureJson;
using capture::ContextOperation;
using capture::IsReceive;
using capture::Observed;
using capture::Time;

struct CaptureEndpoint {
  unsigned tx_cq = 0, rx_cq = 0;
  uint64_t tx_op_flags = 0;
};

struct PostedRequest {
  std::string wr_id;
  std::string op;
  std::string endpoint;
};

CaptureJson FlagNames(uint64_t flags) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {FI_INJECT, "FI_INJECT"},
      {FI_COMPLETION, "FI_COMPLETION"},
      {FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"},
      {FI_INJECT_COMPLETE, "FI_INJECT_COMPLETE"},
      {FI_TRANSMIT_COMPLETE, "FI_TRANSMIT_COMPLETE"},
      {FI_DELIVERY_COMPLETE, "FI_DELIVERY_COMPLETE"},
      {FI_COMMIT_COMPLETE, "FI_COMMIT_COMPLETE"},
      {FI_FENCE, "FI_FENCE"},
      {FI_MORE, "FI_MORE"},
      {FI_SEND, "FI_SEND"},
      {FI_RECV, "FI_RECV"},
      {FI_READ, "FI_READ"},
      {FI_WRITE, "FI_WRITE"},
      {FI_REMOTE_READ, "FI_REMOTE_READ"},
      {FI_REMOTE_WRITE, "FI_REMOTE_WRITE"},
      {FI_MSG, "FI_MSG"},
      {FI_RMA, "FI_RMA"},
      {FI_TAGGED, "FI_TAGGED"},
      {FI_MULTI_RECV, "FI_MULTI_RECV"},
  };
  CaptureJson names = CaptureJson::array();
  for (const auto& [bit, name] : kNames)
    if (flags & bit) names.push_back(name);
  return names;
}

// The level a completion of this endpoint's writes means (its default op_flags): unstated
// when the program left it to the provider.
std::string LevelOf(uint64_t flags) {
  if (flags & FI_COMMIT_COMPLETE) return "commit";
  if (flags & FI_DELIVERY_COMPLETE) return "delivery";
  if (flags & FI_TRANSMIT_COMPLETE) return "transmit";
  if (flags & FI_INJECT_COMPLETE) return "inject";
  return "";
}

bool IsInjectCall(const std::string& op) { return op.find("inject") != std::string::npos; }

std::string Opcode(const std::string& op) {
  if (IsReceive(op)) return "recv";
  const std::string operation = ContextOperation(op);
  return op == "read" ? "rdma_read" : operation;
}

std::string ErrorName(int err) {
  static const std::map<int, const char*> kOwn = {{FI_EOTHER, "FI_EOTHER"},
                                                  {FI_ETOOSMALL, "FI_ETOOSMALL"},
                                                  {FI_EOPBADSTATE, "FI_EOPBADSTATE"},
                                                  {FI_EAVAIL, "FI_EAVAIL"},
                                                  {FI_EBADFLAGS, "FI_EBADFLAGS"},
                                                  {FI_ENOEQ, "FI_ENOEQ"},
                                                  {FI_EDOMAIN, "FI_EDOMAIN"},
                                                  {FI_ENOCQ, "FI_ENOCQ"},
                                                  {FI_ECRC, "FI_ECRC"},
                                                  {FI_ETRUNC, "FI_ETRUNC"},
                                                  {FI_ENOKEY, "FI_ENOKEY"},
                                                  {FI_ENOAV, "FI_ENOAV"},
                                                  {FI_EOVERRUN, "FI_EOVERRUN"}};
  if (auto it = kOwn.find(err); it != kOwn.end()) return it->second;
  const char* name = strerrorname_np(err);
  return name ? std::string("FI_") + name : "FI_ERRNO_" + std::to_string(err);
}

class JournalReader {
 public:
  explicit JournalReader(Observed& seen) : seen_(seen), verbs_(seen, pid_) {}

  void Read(const std::string& text) {
    std::string clean;
    clean.reserve(text.size());
    for (char c : text)
      if (c != '\0') clean += c;
    std::istringstream lines(clean);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      CaptureJson record = CaptureJson::parse(line, nullptr, false);
      if (record.is_discarded() || !record.is_object() || !record.contains("t")) {
        ++seen_.truncated_lines;  // a crash mid-line
        continue;
      }
      Dispatch(record);
    }
  }

 private:
  void Dispatch(const CaptureJson& r) {
    const std::string t = r["t"].get<std::string>();
    if (t == "process") {
      pid_ = r.value("pid", 0);
      seen_.processes.push_back(
          {{"pid", pid_}, {"ppid", r.value("ppid", 0)}, {"program", r.value("program", "")}});
      ++seen_.counts.processes;
    } else if (t == "domain") {
      Domain(r);
    } else if (t == "cq_open") {
      formats_[r.value("cq", 0u)] = r.value("format", 0);
    } else if (t == "endpoint") {
      endpoints_[r.value("ep", 0u)].tx_op_flags = r.value("tx_op_flags", uint64_t{0});
      ++seen_.counts.endpoints;
      const std::string level = LevelOf(r.value("tx_op_flags", uint64_t{0}));
      seen_.levels.insert(level);
    } else if (t == "bind") {
      CaptureEndpoint& ep = endpoints_[r.value("ep", 0u)];
      const uint64_t flags = r.value("flags", uint64_t{0});
      if (flags & FI_TRANSMIT) ep.tx_cq = r.value("cq", 0u);
      if (flags & FI_RECV) ep.rx_cq = r.value("cq", 0u);
    } else if (t == "mr") {
      if (r.value("iface", 0) != 0) seen_.device_memory = true;
    } else if (t == "wr") {
      WorkRequest(r);
    } else if (t == "cq") {
      Completion(r);
    } else if (t == "refused") {
      seen_.refused["any (-FI_EAGAIN)"] += r.value("again", uint64_t{0});
    } else if (t == "unobserved") {
      seen_.unobserved.push_back(std::to_string(pid_) + ": " + r.value("what", ""));
    } else {
      verbs_.Dispatch(r);
    }
  }

  void Domain(const CaptureJson& r) {
    const std::string provider = r.value("provider", "");
    seen_.providers.insert(provider);
    seen_.devices.insert(r.value("domain", ""));
    seen_.transports.insert(provider.find("tcp") != std::string::npos   ? "tcp"
                            : provider.find("shm") != std::string::npos ? "shm"
                            : provider.find("efa") != std::string::npos ? "efa"
                                                                        : "other");
    const uint32_t pv = r.value("prov_version", 0u);
    seen_.releases.insert("libfabric " + r.value("libfabric", std::string("?")) + " (provider " +
                          provider + " " + std::to_string(FI_MAJOR(pv)) + "." +
                          std::to_string(FI_MINOR(pv)) + ")");
  }

  std::string EndpointName(unsigned ep) const {
    return std::to_string(pid_) + "/" + std::to_string(ep);
  }

  void WorkRequest(const CaptureJson& r) {
    const std::string op = r.value("op", "");
    if (r.value("ret", 0) != 0) {  // -FI_EAGAIN and the like: nothing was posted
      ++seen_.refused[op];
      return;
    }
    const unsigned ep = r.value("ep", 0u);
    const std::string wr_id = std::to_string(++seen_.sequence);
    const uint64_t flags = r.value("flags", uint64_t{0});
    CaptureJson wr{{"wr_id", wr_id},
                   {"endpoint", EndpointName(ep)},
                   {"operation", op},
                   {"bytes", r.value("bytes", uint64_t{0})},
                   {"flags", FlagNames(flags)},
                   {"time", Time(r.value("ns", uint64_t{0}))}};
    if (r.contains("data") && !r["data"].is_null()) wr["data"] = r["data"];
    seen_.work_requests.push_back(std::move(wr));
    ++seen_.counts.work_requests;
    if (const std::string operation = ContextOperation(op); !operation.empty())
      seen_.operations.insert(operation);
    if (IsInjectCall(op)) return;  // fi_inject*: no completion, ever (fi_msg(3))
    const CaptureEndpoint& e = endpoints_[ep];
    const unsigned cq = IsReceive(op) ? e.rx_cq : e.tx_cq;
    pending_[{cq, r.value("ctx", "")}].push_back(PostedRequest{wr_id, op, EndpointName(ep)});
  }

  void Completion(const CaptureJson& r) {
    const unsigned cq = r.value("cq", 0u);
    const uint64_t flags = r.value("flags", uint64_t{0});
    ++seen_.counts.completions;
    if ((flags & FI_REMOTE_CQ_DATA) && (flags & (FI_RECV | FI_REMOTE_WRITE))) {
      seen_.notifications.push_back(
          {{"delivery", nullptr},
           {"kind", (flags & FI_REMOTE_WRITE) ? "write_with_imm" : "send_with_data"},
           {"imm", r.contains("data") ? r["data"] : CaptureJson(nullptr)}});
      if (flags & FI_REMOTE_WRITE) return;  // consumed no posted request of this side
    }
    PostedRequest wr{"unmatched-" + std::to_string(seen_.unmatched + 1), "", ""};
    auto queue = pending_.find({cq, r.value("ctx", "")});
    if (queue != pending_.end() && !queue->second.empty()) {
      wr = queue->second.front();
      queue->second.pop_front();
    } else {
      ++seen_.unmatched;
    }
    CaptureJson record{{"wr_id", wr.wr_id}, {"status", "success"}};
    if (r.value("status", "") != "success") {
      ++seen_.counts.errors;
      // An error entry: only wr_id, status, endpoint and the provider's error are valid.
      record["status"] = ErrorName(r.value("err", 0));
      record["qp_num"] = nullptr;
      record["vendor_err"] = r.value("prov_errno", 0);
      record["provider_error"] = r.value("prov_error", "");
      record["endpoint"] = wr.endpoint;
    } else {
      record["opcode"] = wr.op.empty() ? CaptureJson(nullptr) : CaptureJson(Opcode(wr.op));
      record["byte_len"] = r.contains("len") ? r["len"] : CaptureJson(nullptr);
      record["qp_num"] = nullptr;
      record["vendor_err"] = 0;
      record["endpoint"] = wr.endpoint;
    }
    seen_.completions.push_back(std::move(record));
  }

  Observed& seen_;
  int pid_ = 0;
  capture::VerbsJournalReader verbs_;
  std::map<unsigned, CaptureEndpoint> endpoints_;
  std::map<unsigned, int> formats_;
  std::map<std::pair<unsigned, std::string>, std::deque<PostedRequest>> pending_;
};

CaptureJson OneOrNull(const std::set<std::string>& values) {
  if (values.size() != 1 || values.begin()->empty()) return nullptr;
  return *values.begin();
}

CaptureJson Context(const Observed& seen) {
  std::string transport;
  for (const std::string& t : seen.transports)
    transport = transport.empty() || transport == t ? t : "other";
  CaptureJson operation = OneOrNull(seen.operations);
  if (seen.operations.size() > 1) operation = "other";
  return {{"operation", operation},
          {"transport", transport.empty() ? CaptureJson(nullptr) : CaptureJson(transport)},
          {"device", OneOrNull(seen.devices)},
          // Without FI_HMEM a provider takes host memory only; a registration naming a
          // device interface says otherwise.
          {"memory_type", seen.providers.empty() ? CaptureJson(nullptr)
                          : seen.device_memory   ? CaptureJson("other")
                                                 : CaptureJson("dram")},
          {"software_release", OneOrNull(seen.releases)},
          {"completion_level", OneOrNull(seen.levels)}};
}

}  // namespace

Result<std::string> BuildCaptureBundle(const std::vector<std::string>& journals,
                                       const CaptureRun& run, CaptureCounts& counts) {
  Observed seen;
  for (const std::string& text : journals) JournalReader(seen).Read(text);
  CaptureJson refused = CaptureJson::object();
  for (const auto& [op, n] : seen.refused) refused[op] = n;
  CaptureJson bundle{{"schema", "writ.evidence/1"},
                     {"context", Context(seen)},
                     {"deliveries", CaptureJson::array()},
                     {"work_completions", std::move(seen.completions)},
                     {"placement", CaptureJson::array()},
                     {"notifications", std::move(seen.notifications)},
                     {"acknowledgements", CaptureJson::array()},
                     {"retention_promises", CaptureJson::array()},
                     {"claims", CaptureJson::array()},
                     {"capture",
                      {{"tool", "writ capture"},
                       {"command", run.command},
                       {"exit", run.exit},
                       {"providers", seen.providers},
                       {"processes", std::move(seen.processes)},
                       {"work_requests", std::move(seen.work_requests)},
                       {"refused_posts", std::move(refused)},
                       {"unmatched_completions", seen.unmatched},
                       {"unsignaled_requests", seen.unsignaled},
                       {"unobserved", seen.unobserved},
                       {"truncated_lines", seen.truncated_lines}}}};
  counts = seen.counts;
  return bundle.dump(2, ' ', false, CaptureJson::error_handler_t::replace) + "\n";
}

}  // namespace writ::cli
