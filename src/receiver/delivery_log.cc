#include "receiver/delivery_log.h"

#include <cstdio>

#include "receiver/receiver_core.h"
#include "writ/vocabulary.h"

namespace writ::receiver {
namespace {

std::string Milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", seconds * 1000);
  return text;
}

std::string OutcomeSentence(const EndedDelivery& d) {
  std::string line = "outcome of delivery " + d.id + ": " + std::string(OutcomeName(d.outcome));
  if (!d.reason.empty()) line += " (" + d.reason + ")";
  // The sender's words: the ladder's rung, then the retention class reached (or none).
  line +=
      "; reached: " + std::string(d.ladder_reached ? ReceiptRungName(*d.ladder_reached) : "none") +
      ", retention " + std::string(d.retained ? RetentionName(d.retention) : "none") + ", " +
      std::to_string(d.bytes) + " bytes, sender " +
      (d.sender_key.empty() ? "unsigned (" + d.peer + ")" : d.sender_key) + ", " +
      Milliseconds(d.seconds);
  if (!d.detail.empty()) line += ": " + d.detail;
  return line;
}

LogEvent SummaryEvent(const RetainedSummary::Counts& counts) {
  const std::string n = std::to_string(counts.deliveries);
  return LogEvent{LogEvent::Level::kInfo,
                  "deliveries",
                  n + (counts.deliveries == 1 ? " delivery" : " deliveries") + " retained (" +
                      std::to_string(counts.bytes) + " bytes) since the last such line",
                  {{"retained", counts.deliveries}, {"bytes", counts.bytes}}};
}

}  // namespace

bool RetainedSummary::Note(uint64_t bytes, std::chrono::steady_clock::time_point now) {
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  deliveries_.fetch_add(1, std::memory_order_relaxed);
  const int64_t at = now.time_since_epoch().count();
  int64_t next = next_line_ns_.load(std::memory_order_relaxed);
  if (at < next) return false;
  const int64_t after = at + std::chrono::steady_clock::duration(std::chrono::seconds(1)).count();
  // One caller of those that find the second over wins the line.
  return next_line_ns_.compare_exchange_strong(next, after, std::memory_order_relaxed);
}

RetainedSummary::Counts RetainedSummary::Take() {
  return {deliveries_.exchange(0, std::memory_order_relaxed),
          bytes_.exchange(0, std::memory_order_relaxed)};
}

void ReportRetainedSummary(ReceiverCore& core) {
  const RetainedSummary::Counts counts = core.retained_summary.Take();
  if (counts.deliveries == 0 || !core.options.on_event) return;
  core.options.on_event(SummaryEvent(counts));
}

double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void NoteRung(ReceiverCore& core, RungsReached& rungs, uint64_t bytes, ReceiptRung rung) {
  rungs.reached = rung;
  if (rung == ReceiptRung::kRetained) {
    rungs.retained = true;
  } else {
    rungs.ladder_reached = rung;
  }
  core.metrics.RungReached(rung, SecondsSince(rungs.announced));
  if (rung == ReceiptRung::kReceived) core.metrics.BytesReceived(bytes);
}

void NoteRefusal(ReceiverCore& core, const protocol::Refuse& refuse) {
  core.metrics.Refused(refuse.reason);
  if (!core.options.on_event) return;
  const std::string reason(protocol::RefuseReasonName(refuse.reason));
  LogEvent event{LogEvent::Level::kWarning,
                 "refusal",
                 "refused " + (refuse.delivery_id.empty() ? "" : refuse.delivery_id + " ") + "(" +
                     reason + "): " + refuse.detail,
                 {{"id", refuse.delivery_id}, {"reason", reason}, {"detail", refuse.detail}}};
  core.options.on_event(event);
}

void ReportEnded(ReceiverCore& core, const EndedDelivery& d) {
  core.metrics.DeliveryEnded(d.outcome, d.reached.value_or(ReceiptRung::kTransport), d.retention);
  if (!core.options.on_event) return;
  const bool retained = d.outcome == DeliveryOutcome::kRetained;
  if (retained && core.retained_summary.Note(d.bytes, std::chrono::steady_clock::now())) {
    ReportRetainedSummary(core);
  }
  if (retained && !core.options.log_each_delivery) return;
  const auto level = retained ? LogEvent::Level::kDebug : LogEvent::Level::kWarning;
  LogEvent event{level,
                 "delivery",
                 OutcomeSentence(d),
                 {{"id", d.id},
                  {"outcome", std::string(OutcomeName(d.outcome))},
                  {"rung", std::string(d.reached ? ReceiptRungName(*d.reached) : "none")},
                  {"class", std::string(RetentionName(d.retention))},
                  {"bytes", d.bytes},
                  {"sender_key", d.sender_key},
                  {"peer", d.peer},
                  {"elapsed_seconds", d.seconds}}};
  if (!d.reason.empty()) event.fields.push_back({"reason", d.reason});
  if (!d.detail.empty()) event.fields.push_back({"detail", d.detail});
  core.options.on_event(event);
}

LogEvent::Level RoutedLineLevel(const std::string& line) {
  const auto has = [&line](std::string_view what) { return line.find(what) != std::string::npos; };
  // What the receiver does on its own schedule, as configured: no one need act on it.
  const bool routine = (line.rfind("store: removed delivery ", 0) == 0 &&
                        has("its time-to-live passed") && !has("PROMISE BROKEN")) ||
                       line.rfind("shutting down: ", 0) == 0 ||
                       has(" closed: the receiver is shutting down") ||
                       has(" closed: idle (no delivery in progress") ||
                       has(" closed: no announce or query within the handshake timeout");
  return routine ? LogEvent::Level::kInfo : LogEvent::Level::kWarning;
}

void RouteLinesToEvents(ReceiverOptions& options) {
  if (!options.on_event) return;
  auto route = [sink = options.on_event](std::function<void(const std::string&)> also,
                                         const char* kind) {
    return [sink, also = std::move(also), kind](const std::string& line) {
      if (also) also(line);
      sink(LogEvent{RoutedLineLevel(line), kind, line, {}});
    };
  };
  options.on_store_event = route(std::move(options.on_store_event), "store");
  options.on_connection_event = route(std::move(options.on_connection_event), "connection");
}

}  // namespace writ::receiver
