#include "cluster/repair_task.h"

#include <nlohmann/json.hpp>

#include "common/hex.h"

namespace writ::cluster {
namespace {

using json = nlohmann::json;

std::string HexOf(std::string_view text) {
  return ToHex(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Result<json> ParseObject(std::string_view text, const char* what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Malformed(std::string(what) + ": not a JSON object");
  }
  return j;
}

}  // namespace

std::string RepairTasksFor(std::string_view holder_key_id) {
  return kRepairTasksPrefix + std::string(holder_key_id) + "/";
}

std::string RepairTaskKey(std::string_view holder_key_id, std::string_view id) {
  return RepairTasksFor(holder_key_id) + HexOf(id);
}

std::string RepairResultKey(std::string_view holder_key_id, std::string_view id) {
  return kRepairResultsPrefix + std::string(holder_key_id) + "/" + HexOf(id);
}

std::string RepairTaskToJson(const RepairTask& task) {
  return json{{"id", task.id}, {"k", task.k}, {"replica_retention", task.replica_retention}}.dump();
}

Result<RepairTask> RepairTaskFromJson(std::string_view text) {
  WRIT_ASSIGN_OR_RETURN(json j, ParseObject(text, "repair task"));
  RepairTask task;
  const auto id = j.find("id");
  const auto k = j.find("k");
  const auto retention = j.find("replica_retention");
  if (id == j.end() || !id->is_string() || id->get_ref<const std::string&>().empty()) {
    return Status::Malformed("repair task: no delivery id");
  }
  if (k == j.end() || !k->is_number_unsigned() || k->get<uint64_t>() < 1 ||
      k->get<uint64_t>() > kMaxRepairCopies) {
    return Status::Malformed("repair task: k must be 1 to " + std::to_string(kMaxRepairCopies));
  }
  if (retention == j.end() || !retention->is_string()) {
    return Status::Malformed("repair task: no replica_retention");
  }
  task.id = id->get<std::string>();
  task.k = static_cast<uint32_t>(k->get<uint64_t>());
  task.replica_retention = retention->get<std::string>();
  return task;
}

std::string RepairResultToJson(const RepairResult& result) {
  return json{{"ok", result.ok}, {"error", result.error}, {"lines", result.lines}}.dump();
}

Result<RepairResult> RepairResultFromJson(std::string_view text) {
  WRIT_ASSIGN_OR_RETURN(json j, ParseObject(text, "repair result"));
  RepairResult result;
  const auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) return Status::Malformed("repair result: no 'ok'");
  result.ok = ok->get<bool>();
  if (auto e = j.find("error"); e != j.end() && e->is_string())
    result.error = e->get<std::string>();
  if (auto lines = j.find("lines"); lines != j.end() && lines->is_array()) {
    for (const json& line : *lines) {
      if (line.is_string()) result.lines.push_back(line.get<std::string>());
    }
  }
  return result;
}

}  // namespace writ::cluster
