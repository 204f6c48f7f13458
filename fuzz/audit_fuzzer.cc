// Fuzzes the evidence bundle parser and the audit. Properties checked on every input:
//  - ParseBundle never crashes, leaks, throws or reads out of bounds (sanitizers);
//  - it accepts nothing that is not JSON (nlohmann::json::accept is the oracle) and
//    rejects only with Status::Malformed and a message;
//  - on an accepted bundle the audit is deterministic, its counts add up, every
//    claim has a reason, rule 1 holds portion by portion, rule 9 at inject, every
//    question is asked once (rule 16), and both reports render
//    (the JSON one parses back as writ.audit/1);
//  - AuditStream (the CLI's one-pass path) gives the same error or the same report.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "writ/audit.h"

namespace {

using namespace writ::audit;

void Require(bool condition) {
  if (!condition) std::abort();
}

// Rule 1, recomputed the slow and obvious way.
void CheckTransport(const EvidenceBundle& bundle, const AuditReport& report) {
  std::unordered_map<std::string, std::pair<int, int>> records;  // wr_id → successes, errors
  for (const WorkCompletion& r : bundle.work_completions)
    (r.success() ? records[r.wr_id].first : records[r.wr_id].second)++;
  for (std::size_t i = 0; i < bundle.deliveries.size(); ++i) {
    bool any_error = false, all_success = !bundle.deliveries[i].portions.empty();
    for (const Portion& p : bundle.deliveries[i].portions) {
      auto it = records.find(p.wr_id);
      if (it != records.end() && it->second.second > 0) any_error = true;
      if (it == records.end() || it->second.first == 0) all_success = false;
    }
    const TransportState t = report.deliveries[i].transport;
    Require((t == TransportState::kFailed) == any_error);
    if (t == TransportState::kEstablished) Require(all_success);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto bundle = ParseBundle(text);
  // The CLI's one-pass path (compact records) agrees with the typed bundle's on
  // every input: the same error, or the same report.
  std::istringstream stream{std::string(text)};
  auto streamed = AuditStream(stream);
  Require(streamed.ok() == bundle.ok());
  if (!bundle.ok()) {
    Require(bundle.status().code() == writ::ErrorCode::kMalformed);
    Require(!bundle.status().message().empty());
    Require(streamed.status().message() == bundle.status().message());
    return 0;
  }
  Require(nlohmann::json::accept(text));

  const AuditReport report = Audit(*bundle);
  Require(report.records == bundle->work_completions.size());
  Require(report.successful + report.failed == report.records);
  Require(report.logical_deliveries == bundle->deliveries.size());
  Require(report.deliveries.size() == bundle->deliveries.size());
  Require(report.claims.size() == bundle->claims.size());
  uint64_t total = 0;
  for (std::size_t i = 0; i < report.deliveries.size(); ++i) {
    Require(report.deliveries[i].id == bundle->deliveries[i].id);
    total += report.deliveries[i].bytes;
  }
  Require(report.placed_bytes <= total);
  for (std::size_t i = 0; i < report.claims.size(); ++i) {
    Require(report.claims[i].id == bundle->claims[i].id);
    Require(!report.claims[i].reason.empty());
    if (report.claims[i].verdict == Verdict::kNotSupported) {
      Require(!report.claims[i].question.empty());
      // Rule 16: every unsupported claim's question is asked.
      Require(std::find(report.questions.begin(), report.questions.end(),
                        report.claims[i].question) != report.questions.end());
    }
  }
  // Rule 9: nothing is transferred at completion level inject.
  if (bundle->context.completion_level == CompletionLevel::kInject)
    for (const DeliveryReport& d : report.deliveries)
      Require(d.transport != TransportState::kEstablished);
  // Rule 16: each question once.
  std::unordered_set<std::string_view> asked(report.questions.begin(), report.questions.end());
  Require(asked.size() == report.questions.size());
  for (const WorkCompletion& r : bundle->work_completions)
    Require(r.success() == r.success_detail.has_value());  // rule 2, structurally
  CheckTransport(*bundle, report);

  const std::string json = ReportToJson(report);
  Require(json == ReportToJson(Audit(*bundle)));
  Require(json == ReportToJson(*streamed));
  const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  Require(!doc.is_discarded() && doc.value("schema", "") == kReportSchema);
  Require(!ReportToText(report).empty());
  return 0;
}
