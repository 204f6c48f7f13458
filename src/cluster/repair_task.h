// `writ repair` from any host: the requester puts a task in etcd for a receiver that holds a
// counted copy; that receiver's serve (its repair agent, tools/writ/serve_repair_agent.h)
// claims the task by deleting it, sends its copy to the next placed members from its own
// data directory, and puts the result. Keys (docs/operating.md, "Repair"):
//   /writ/repair/tasks/KEYID/HEXID    the task, under the requester's lease
//   /writ/repair/results/KEYID/HEXID  the holder's result, under a lease of its own
// KEYID is the holder's key id, HEXID the delivery id in hex (ids may hold any character).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"

namespace writ::cluster {

inline constexpr const char* kRepairTasksPrefix = "/writ/repair/tasks/";
inline constexpr const char* kRepairResultsPrefix = "/writ/repair/results/";

struct RepairTask {
  std::string id;  // the delivery
  uint32_t k = 2;  // copies to restore
  std::string replica_retention = "power-loss";
};

// What the holder did: `ok` when K copies are counted after its sends; its report lines
// (one per member asked and per copy sent) either way.
struct RepairResult {
  bool ok = false;
  std::string error;
  std::vector<std::string> lines;
};

// Every task for the holder with this key id.
std::string RepairTasksFor(std::string_view holder_key_id);
std::string RepairTaskKey(std::string_view holder_key_id, std::string_view id);
std::string RepairResultKey(std::string_view holder_key_id, std::string_view id);

std::string RepairTaskToJson(const RepairTask& task);
// Strict: an id, 1 <= k <= kMaxReplicas, a retention class name.
Result<RepairTask> RepairTaskFromJson(std::string_view text);
std::string RepairResultToJson(const RepairResult& result);
Result<RepairResult> RepairResultFromJson(std::string_view text);

inline constexpr uint32_t kMaxRepairCopies = 16;

}  // namespace writ::cluster
