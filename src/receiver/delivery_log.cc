#include "receiver/delivery_log.h"

#include <cstdio>

#include "receiver/inbound_delivery.h"
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

}  // namespace

double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void NoteRung(ReceiverCore& core, InboundDelivery& delivery, ReceiptRung rung) {
  delivery.reached = rung;
  if (rung == ReceiptRung::kRetained) {
    delivery.retained = true;
  } else {
    delivery.ladder_reached = rung;
  }
  core.metrics.RungReached(rung, SecondsSince(delivery.announced));
  if (rung == ReceiptRung::kReceived) core.metrics.BytesReceived(delivery.announce().bytes);
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
  const auto level =
      d.outcome == DeliveryOutcome::kRetained ? LogEvent::Level::kInfo : LogEvent::Level::kWarning;
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
