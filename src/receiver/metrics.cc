#include "receiver/metrics.h"

#include <algorithm>
#include <cstdio>

#include "writ/vocabulary.h"

namespace writ::receiver {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr ReceiptRung kRungs[] = {ReceiptRung::kReceived, ReceiptRung::kValidated,
                                  ReceiptRung::kProcessed, ReceiptRung::kRetained};
constexpr RetentionClass kClasses[] = {RetentionClass::kVolatile, RetentionClass::kProcessRestart,
                                       RetentionClass::kPowerLoss};
constexpr ScrubResult kScrubs[] = {ScrubResult::kPassed, ScrubResult::kQuarantined,
                                   ScrubResult::kUnreadable};

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(std::string& out, const std::string& name, const std::string& labels, uint64_t value) {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(value) + "\n";
}

std::string Label(const char* name, std::string_view value) {
  return std::string(name) + "=\"" + std::string(value) + "\"";
}

// "none" before the first receipt, else the rung's name.
std::string_view RungLabel(size_t index) {
  return index == 0 ? "none" : ReceiptRungName(kRungs[index - 1]);
}

std::string_view ScrubName(ScrubResult result) {
  switch (result) {
    case ScrubResult::kPassed: return "passed";
    case ScrubResult::kQuarantined: return "quarantined";
    case ScrubResult::kUnreadable: return "unreadable";
  }
  return "unknown";
}

}  // namespace

std::string_view OutcomeName(DeliveryOutcome outcome) {
  switch (outcome) {
    case DeliveryOutcome::kRetained: return "retained";
    case DeliveryOutcome::kRefused: return "refused";
    case DeliveryOutcome::kAborted: return "aborted";
  }
  return "unknown";
}

void LatencyHistogram::Observe(double seconds) {
  size_t bucket = 0;
  while (bucket < kLatencyBuckets.size() && seconds > kLatencyBuckets[bucket]) ++bucket;
  buckets_[bucket].fetch_add(1, kRelaxed);
  sum_ns_.fetch_add(seconds > 0 ? static_cast<uint64_t>(seconds * 1e9) : 0, kRelaxed);
}

void LatencyHistogram::Render(std::string& out, const std::string& name,
                              const std::string& labels) const {
  const std::string prefix = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kLatencyBuckets.size(); ++i) {
    cumulative += buckets_[i].load(kRelaxed);
    const std::string le = i < kLatencyBuckets.size() ? Number(kLatencyBuckets[i]) : "+Inf";
    Sample(out, name + "_bucket", prefix + Label("le", le), cumulative);
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + Number(static_cast<double>(sum_ns_.load(kRelaxed)) / 1e9) +
         "\n";
  Sample(out, name + "_count", labels, cumulative);
}

void Metrics::DeliveryEnded(DeliveryOutcome outcome, ReceiptRung reached,
                            RetentionClass retention) {
  size_t rung = 0;  // none
  for (size_t i = 0; i < std::size(kRungs); ++i) {
    if (kRungs[i] == reached) rung = i + 1;
  }
  const size_t cls = static_cast<size_t>(retention) - 1;
  if (cls >= 3) return;
  Count(deliveries_[static_cast<size_t>(outcome)][rung][cls]);
}

void Metrics::RefusedAtAnnounce(RetentionClass retention) {
  const size_t cls = static_cast<size_t>(retention) - 1;
  if (cls >= 3) return;
  Count(deliveries_[static_cast<size_t>(DeliveryOutcome::kRefused)][0][cls]);
}

void Metrics::Refused(protocol::RefuseReason reason) {
  const size_t index = static_cast<size_t>(reason);
  if (index < refusals_.size()) Count(refusals_[index]);
}

void Metrics::StoreCommitted(RetentionClass retention, double seconds) {
  const size_t cls = static_cast<size_t>(retention) - 1;
  if (cls < commits_.size()) commits_[cls].Observe(seconds);
}

void Metrics::RenderDeliveries(std::string& out) const {
  Header(out, "writ_deliveries_total", "counter",
         "Deliveries ended, by outcome, the highest receipt rung issued and retention class.");
  for (size_t o = 0; o < kOutcomes; ++o) {
    for (size_t r = 0; r < 5; ++r) {
      for (size_t c = 0; c < 3; ++c) {
        const std::string labels = Label("outcome", OutcomeName(static_cast<DeliveryOutcome>(o))) +
                                   "," + Label("rung", RungLabel(r)) + "," +
                                   Label("class", RetentionName(kClasses[c]));
        Sample(out, "writ_deliveries_total", labels, deliveries_[o][r][c].load(kRelaxed));
      }
    }
  }
  Header(out, "writ_received_bytes_total", "counter",
         "Bytes of deliveries whose every chunk landed (the received rung).");
  Sample(out, "writ_received_bytes_total", "", received_bytes_.load(kRelaxed));
  Header(out, "writ_windows_registered_total", "counter",
         "Windows registered for deliveries' chunks (one memory registration each).");
  Sample(out, "writ_windows_registered_total", "", windows_registered_.load(kRelaxed));
  Header(out, "writ_exposed_bytes_total", "counter",
         "Bytes of addressed deliveries consumed in the application's buffer, by how: where "
         "they landed (in_place) or copied into it (copied).");
  Sample(out, "writ_exposed_bytes_total", Label("how", "in_place"),
         exposed_in_place_bytes_.load(kRelaxed));
  Sample(out, "writ_exposed_bytes_total", Label("how", "copied"),
         exposed_copied_bytes_.load(kRelaxed));
}

void Metrics::RenderRefusals(std::string& out) const {
  Header(out, "writ_refusals_total", "counter",
         "Refusals sent, by reason (admission, limits, validation, retention, shutdown).");
  for (size_t i = 0; i < refusals_.size(); ++i) {
    const auto reason = static_cast<protocol::RefuseReason>(i);
    if (!protocol::IsKnown(reason)) continue;
    std::string name(protocol::RefuseReasonName(reason));  // "conflicting id": conflicting_id
    std::replace(name.begin(), name.end(), ' ', '_');
    Sample(out, "writ_refusals_total", Label("reason", name), refusals_[i].load(kRelaxed));
  }
  Header(out, "writ_scrub_results_total", "counter",
         "Retained deliveries the background scrub re-hashed, by result.");
  for (ScrubResult result : kScrubs) {
    Sample(out, "writ_scrub_results_total", Label("result", ScrubName(result)),
           scrubs_[static_cast<size_t>(result)].load(kRelaxed));
  }
}

void Metrics::RenderLatencies(std::string& out) const {
  Header(out, "writ_rung_latency_seconds", "histogram",
         "Seconds from a delivery's announce to each receipt rung issued.");
  for (ReceiptRung rung : kRungs) {
    rungs_[static_cast<size_t>(rung)].Render(out, "writ_rung_latency_seconds",
                                             Label("rung", ReceiptRungName(rung)));
  }
  Header(out, "writ_store_commit_seconds", "histogram",
         "Seconds a delivery's store commit took (the syncs its retention class asks for).");
  for (RetentionClass cls : kClasses) {
    commits_[static_cast<size_t>(cls) - 1].Render(out, "writ_store_commit_seconds",
                                                  Label("class", RetentionName(cls)));
  }
}

std::string Metrics::Render(const MetricGauges& gauges) const {
  std::string out;
  RenderDeliveries(out);
  RenderRefusals(out);
  RenderLatencies(out);
  const std::pair<const char*, const char*> names[] = {
      {"writ_windows", "Windows in the window pool."},
      {"writ_windows_in_use", "Windows granted to deliveries in progress."},
      {"writ_deliveries_in_progress", "Deliveries admitted and not yet ended."},
      {"writ_volatile_capacity_bytes", "Bytes all volatile deliveries may hold together."},
      {"writ_volatile_capacity_used_bytes", "Bytes of the volatile capacity taken now."}};
  const uint64_t values[] = {gauges.windows, gauges.windows_in_use, gauges.deliveries_in_progress,
                             gauges.volatile_capacity_bytes, gauges.volatile_used_bytes};
  for (size_t i = 0; i < std::size(values); ++i) {
    Header(out, names[i].first, "gauge", names[i].second);
    Sample(out, names[i].first, "", values[i]);
  }
  return out;
}

}  // namespace writ::receiver
