// The libibverbs half of `writ capture`'s reader: a process's verbs records (written by
// src/capture/verbs_hooks.c) as work requests, completions and notifications. Numbers
// here are libibverbs' ABI values (verbs.h), spelled out so that writ builds without
// its headers.
#include "capture_observed.h"

namespace writ::cli::capture {
namespace {

constexpr int kQpTypeRc = 2;                 // IBV_QPT_RC
constexpr unsigned kSendSignaled = 1u << 1;  // IBV_SEND_SIGNALED
constexpr unsigned kWcRecv = 1u << 7;        // IBV_WC_RECV: set in every receive opcode
constexpr unsigned kWcRecvRdmaWithImm = kWcRecv + 1;
constexpr unsigned kWcWithImm = 1u << 1;  // IBV_WC_WITH_IMM

// enum ibv_wc_status, by value.
std::string StatusName(unsigned status) {
  static const char* const kNames[] = {"success",
                                       "IBV_WC_LOC_LEN_ERR",
                                       "IBV_WC_LOC_QP_OP_ERR",
                                       "IBV_WC_LOC_EEC_OP_ERR",
                                       "IBV_WC_LOC_PROT_ERR",
                                       "IBV_WC_WR_FLUSH_ERR",
                                       "IBV_WC_MW_BIND_ERR",
                                       "IBV_WC_BAD_RESP_ERR",
                                       "IBV_WC_LOC_ACCESS_ERR",
                                       "IBV_WC_REM_INV_REQ_ERR",
                                       "IBV_WC_REM_ACCESS_ERR",
                                       "IBV_WC_REM_OP_ERR",
                                       "IBV_WC_RETRY_EXC_ERR",
                                       "IBV_WC_RNR_RETRY_EXC_ERR",
                                       "IBV_WC_LOC_RDD_VIOL_ERR",
                                       "IBV_WC_REM_INV_RD_REQ_ERR",
                                       "IBV_WC_REM_ABORT_ERR",
                                       "IBV_WC_INV_EECN_ERR",
                                       "IBV_WC_INV_EEC_STATE_ERR",
                                       "IBV_WC_FATAL_ERR",
                                       "IBV_WC_RESP_TIMEOUT_ERR",
                                       "IBV_WC_GENERAL_ERR",
                                       "IBV_WC_TM_ERR",
                                       "IBV_WC_TM_RNDV_INCOMPLETE"};
  if (status < std::size(kNames)) return kNames[status];
  return "IBV_WC_STATUS_" + std::to_string(status);
}

// enum ibv_wc_opcode, by value, in the bundle's opcode words.
std::string OpcodeName(unsigned opcode) {
  switch (opcode) {
    case 0: return "send";
    case 1: return "rdma_write";
    case 2: return "rdma_read";
    case 3:
    case 4:
    case 9: return "atomic";
    case kWcRecv: return "recv";
    case kWcRecvRdmaWithImm: return "recv_rdma_with_imm";
    default: return "other";
  }
}

// byte_len is meaningful for receives, RDMA reads and atomics only (ibv_poll_cq(3)).
bool HasByteLength(unsigned opcode) {
  return (opcode & kWcRecv) || opcode == 2 || opcode == 3 || opcode == 4;
}

CaptureJson SendFlagNames(unsigned flags) {
  static const std::pair<unsigned, const char*> kNames[] = {{1u << 0, "IBV_SEND_FENCE"},
                                                            {1u << 1, "IBV_SEND_SIGNALED"},
                                                            {1u << 2, "IBV_SEND_SOLICITED"},
                                                            {1u << 3, "IBV_SEND_INLINE"},
                                                            {1u << 4, "IBV_SEND_IP_CSUM"}};
  CaptureJson names = CaptureJson::array();
  for (const auto& [bit, name] : kNames)
    if (flags & bit) names.push_back(name);
  return names;
}

// transport_type 1 is iWARP; otherwise port 1's link layer: 1 InfiniBand, 2 Ethernet.
std::string DeviceKind(int transport_type, int link_layer) {
  if (transport_type == 1) return "iwarp";
  if (link_layer == 1) return "ib";
  if (link_layer == 2) return "roce";
  return "other";
}

// "libibverbs.so.1.14.44.0" carries rdma-core 44.0.
std::string Release(const std::string& library) {
  const std::string prefix = "libibverbs.so.1.";
  const size_t dot = library.find('.', prefix.size());
  if (library.rfind(prefix, 0) == 0 && dot != std::string::npos && dot + 1 < library.size())
    return "rdma-core " + library.substr(dot + 1) + " (" + library + ")";
  return library.empty() ? "libibverbs" : library;
}

}  // namespace

bool VerbsJournalReader::Dispatch(const CaptureJson& r) {
  const std::string t = r["t"].get<std::string>();
  if (t == "verbs_device") {
    OpenDevice(r);
  } else if (t == "vqp") {
    CreateQueuePair(r);
  } else if (t == "vwr") {
    if (r.contains("batch"))  // built through ibv_wr_*: posted only if its batch completes
      batches_[{r.value("dev", 0u), "qp" + std::to_string(r.value("qp", 0u))}].push_back(r);
    else
      Post(r);
  } else if (t == "vbatch") {
    EndBatch(r);
  } else if (t == "vwc") {
    Completion(r);
  } else {
    return false;
  }
  return true;
}

void VerbsJournalReader::OpenDevice(const CaptureJson& r) {
  Device& d = devices_[r.value("dev", 0u)];
  d.name = r.value("device", "");
  d.kind = DeviceKind(r.value("transport_type", -1), r.value("link_layer", -1));
  seen_.providers.insert("libibverbs");
  seen_.devices.insert(d.name);
  seen_.releases.insert(Release(r.value("release", "")));
}

void VerbsJournalReader::CreateQueuePair(const CaptureJson& r) {
  const unsigned dev = r.value("dev", 0u);
  Queue& q = queue_pairs_[{dev, "qp" + std::to_string(r.value("qp", 0u))}];
  q.type = r.value("type", 0);
  q.signal_all = r.value("sq_sig_all", 0) != 0;
  q.send_cq = r.value("send_cq", 0u);
  q.recv_cq = r.value("recv_cq", 0u);
  q.srq = r.value("srq", -1ll);
  ++seen_.counts.endpoints;
  const std::string kind = devices_.count(dev) ? devices_[dev].kind : "other";
  seen_.transports.insert(q.type == kQpTypeRc && kind != "other"
                              ? (kind == "iwarp" ? "iwarp" : kind + "_rc")
                              : "other");
}

std::string VerbsJournalReader::EndpointName(unsigned dev, const std::string& queue) const {
  auto d = devices_.find(dev);
  return std::to_string(pid_) + "/" +
         (d != devices_.end() ? d->second.name : "dev" + std::to_string(dev)) + "/" + queue;
}

void VerbsJournalReader::Post(const CaptureJson& r) {
  const std::string op = r.value("op", "");
  if (r.value("ret", 0) != 0) {  // the provider refused it: nothing was posted
    ++seen_.refused[op];
    return;
  }
  const unsigned dev = r.value("dev", 0u);
  const std::string queue = r.contains("srq") ? "srq" + std::to_string(r.value("srq", 0u))
                                              : "qp" + std::to_string(r.value("qp", 0u));
  const unsigned flags = r.value("flags", 0u);
  Posted posted{std::to_string(++seen_.sequence), EndpointName(dev, queue),
                r.value("wr_id", uint64_t{0}), true};
  const char* call = r.contains("batch") ? "ibv_wr_complete"
                     : op != "recv"      ? "ibv_post_send"
                     : r.contains("srq") ? "ibv_post_srq_recv"
                                         : "ibv_post_recv";
  CaptureJson wr{{"wr_id", posted.wr_id},
                 {"endpoint", posted.endpoint},
                 {"operation", op},
                 {"call", call},
                 {"bytes", r.value("bytes", uint64_t{0})},
                 {"flags", SendFlagNames(flags)},
                 {"time", Time(r.value("ns", uint64_t{0}))},
                 {"program_wr_id", posted.program_wr_id}};
  if (r.contains("data") && !r["data"].is_null()) wr["data"] = r["data"];
  seen_.work_requests.push_back(std::move(wr));
  ++seen_.counts.work_requests;
  if (const std::string operation = ContextOperation(op); !operation.empty())
    seen_.operations.insert(operation);
  if (op != "recv") {
    const auto qp = queue_pairs_.find({dev, queue});
    posted.signaled =
        (flags & kSendSignaled) || (qp != queue_pairs_.end() && qp->second.signal_all);
    if (!posted.signaled) ++seen_.unsignaled;
  }
  pending_[{dev, queue}].push_back(std::move(posted));
}

void VerbsJournalReader::EndBatch(const CaptureJson& r) {
  const QueueKey key{r.value("dev", 0u), "qp" + std::to_string(r.value("qp", 0u))};
  std::vector<CaptureJson> batch = std::move(batches_[key]);
  batches_.erase(key);
  const bool posted = !r.contains("aborted") && r.value("ret", -1) == 0;
  for (CaptureJson& wr : batch) {
    wr["ret"] = posted ? 0 : -1;
    Post(wr);
  }
}

// A success completes the oldest signaled request with its wr_id (the unsignaled ones
// before it never get a completion of their own); an error may complete any request.
bool VerbsJournalReader::Take(const QueueKey& key, uint64_t program_wr_id, bool success,
                              Posted& out) {
  auto queue = pending_.find(key);
  if (queue == pending_.end()) return false;
  std::deque<Posted>& q = queue->second;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].program_wr_id != program_wr_id || (success && !q[i].signaled)) continue;
    out = std::move(q[i]);
    size_t drop = 0;  // unsignaled requests ahead of it, done without a record
    while (drop < i && !q[drop].signaled) ++drop;
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
    q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(drop));
    return true;
  }
  return false;
}

// The request a completion ends: on its QP's receive queue (or the QP's SRQ) or send
// queue by its opcode; an error carries no valid opcode, so both, send queue first.
// A completion with no QP number (an extended CQ created without it) is looked for on
// every QP bound to its CQ.
bool VerbsJournalReader::Match(const CaptureJson& r, bool receive, Posted& out) {
  const unsigned dev = r.value("dev", 0u), cq = r.value("cq", 0u);
  const uint64_t wr_id = r.value("wr_id", uint64_t{0});
  const bool success = r.value("status", 0u) == 0;
  const CaptureJson qp_num = r.value("qp", CaptureJson(nullptr));
  for (const auto& [key, qp] : queue_pairs_) {
    if (key.first != dev) continue;
    if (qp_num.is_number_unsigned() ? key.second != "qp" + std::to_string(qp_num.get<unsigned>())
                                    : (qp.send_cq != cq && qp.recv_cq != cq))
      continue;
    const QueueKey receives = qp.srq >= 0 ? QueueKey{dev, "srq" + std::to_string(qp.srq)} : key;
    if (!receive && Take(key, wr_id, success, out)) return true;
    if ((receive || !success) && Take(receives, wr_id, success, out)) return true;
  }
  return false;
}

void VerbsJournalReader::Completion(const CaptureJson& r) {
  ++seen_.counts.completions;
  const unsigned status = r.value("status", 0u), opcode = r.value("opcode", 0u);
  const bool success = status == 0;
  if (success && (opcode == kWcRecvRdmaWithImm || (r.value("wc_flags", 0u) & kWcWithImm)))
    seen_.notifications.push_back(
        {{"delivery", nullptr},
         {"kind", opcode == kWcRecvRdmaWithImm ? "write_with_imm" : "send_with_data"},
         {"imm", r.contains("data") ? r["data"] : CaptureJson(nullptr)}});
  Posted wr;
  if (!Match(r, success && (opcode & kWcRecv), wr)) {
    wr.wr_id = "unmatched-" + std::to_string(++seen_.unmatched);
  }
  CaptureJson record{{"wr_id", wr.wr_id}, {"status", StatusName(status)}};
  if (!success) {
    ++seen_.counts.errors;  // only wr_id, status, qp_num and vendor_err are valid
  } else {
    record["opcode"] = OpcodeName(opcode);
    record["byte_len"] =
        HasByteLength(opcode) ? r.value("byte_len", CaptureJson(nullptr)) : CaptureJson(nullptr);
  }
  record["qp_num"] = r.value("qp", CaptureJson(nullptr));
  record["vendor_err"] = success ? 0u : r.value("vendor_err", 0u);
  record["endpoint"] = wr.endpoint.empty() ? CaptureJson(nullptr) : CaptureJson(wr.endpoint);
  seen_.completions.push_back(std::move(record));
}

}  // namespace writ::cli::capture
