// What `writ capture` gathers from the journals, across processes, before it becomes a
// bundle: shared by the libfabric reader (capture_bundle.cc) and the libibverbs reader
// (capture_verbs.cc).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "capture_bundle.h"

namespace writ::cli::capture {

using CaptureJson = nlohmann::ordered_json;

struct Observed {
  CaptureJson work_requests = CaptureJson::array();
  CaptureJson completions = CaptureJson::array();
  CaptureJson notifications = CaptureJson::array();
  CaptureJson processes = CaptureJson::array();
  std::set<std::string> providers, devices, releases, operations, levels, transports;
  std::vector<std::string> unobserved;  // what the interposer said it could not see
  bool device_memory = false;
  uint64_t sequence = 0, unmatched = 0, truncated_lines = 0;
  uint64_t unsignaled =
      0;  // verbs requests posted without IBV_SEND_SIGNALED: no completion of their own
  std::map<std::string, uint64_t> refused;  // op -> posts the provider did not accept
  CaptureCounts counts;
};

// "2026-12-02T22:03:41.123456789Z" from nanoseconds since the epoch.
std::string Time(uint64_t ns);
bool IsReceive(const std::string& op);
// The bundle's name for what a work request did (the context's operation vocabulary);
// empty for a receive.
std::string ContextOperation(const std::string& op);

// Reads a process's libibverbs records (t: verbs_device, vqp, vwr, vbatch, vwc).
class VerbsJournalReader {
 public:
  VerbsJournalReader(Observed& seen, const int& pid) : seen_(seen), pid_(pid) {}
  // False when the record is not one of libibverbs'.
  bool Dispatch(const CaptureJson& record);

 private:
  struct Device {
    std::string name, kind;  // kind: ib, roce, iwarp, other
  };
  struct Queue {
    int type = 0;
    bool signal_all = false;
    unsigned send_cq = 0, recv_cq = 0;
    long long srq = -1;
  };
  struct Posted {
    std::string wr_id, endpoint;
    uint64_t program_wr_id = 0;
    bool signaled = true;
  };
  using QueueKey = std::pair<unsigned, std::string>;  // device, "qpN" or "srqN"

  void OpenDevice(const CaptureJson& r);
  void CreateQueuePair(const CaptureJson& r);
  void Post(const CaptureJson& r);
  void EndBatch(const CaptureJson& r);
  void Completion(const CaptureJson& r);
  std::string EndpointName(unsigned dev, const std::string& queue) const;
  bool Take(const QueueKey& key, uint64_t program_wr_id, bool success, Posted& out);
  bool Match(const CaptureJson& r, bool receive, Posted& out);

  Observed& seen_;
  const int& pid_;
  std::map<unsigned, Device> devices_;
  std::map<QueueKey, Queue> queue_pairs_;
  std::map<QueueKey, std::vector<CaptureJson>> batches_;
  std::map<QueueKey, std::deque<Posted>> pending_;
};

}  // namespace writ::cli::capture
