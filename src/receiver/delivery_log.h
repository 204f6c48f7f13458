// What a receiver tells its log (ReceiverOptions::on_event) and its metrics about each
// delivery: the rungs it reached, each refusal, and how it ended.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "protocol/messages.h"
#include "receiver/metrics.h"
#include "writ/receiver.h"
#include "writ/types.h"

namespace writ::receiver {

struct ReceiverCore;
class InboundDelivery;

// A delivery that ended, as the log and the metrics see it.
struct EndedDelivery {
  std::string id;
  std::string sender_key;  // the key id of its signed announce; empty when unsigned
  std::string peer;        // the control connection's HOST:PORT
  uint64_t bytes = 0;
  RetentionClass retention = RetentionClass::kVolatile;
  std::optional<ReceiptRung> reached;         // the highest receipt rung issued
  std::optional<ReceiptRung> ladder_reached;  // the highest below `retained`
  bool retained = false;                      // `retained` issued: `retention` was reached
  double seconds = 0;                         // from its announce to its end
  DeliveryOutcome outcome = DeliveryOutcome::kAborted;
  std::string reason;  // a refusal's reason
  std::string detail;  // why it was refused or aborted
};

double SecondsSince(std::chrono::steady_clock::time_point since);

// A receipt rung issued for `delivery`: its latency, and the bytes once every chunk landed.
void NoteRung(ReceiverCore& core, InboundDelivery& delivery, ReceiptRung rung);
// A refusal sent (or meant for a sender that left): counted and logged.
void NoteRefusal(ReceiverCore& core, const protocol::Refuse& refuse);
// Counts and logs one delivery's outcome line.
void ReportEnded(ReceiverCore& core, const EndedDelivery& ended);

// The level of a store or connection line: info for the routine ones (an expiry, a
// shutdown, an idle or silent connection closed), warning for everything else.
LogEvent::Level RoutedLineLevel(const std::string& line);
// `options` with its on_store_event and on_connection_event lines also reaching on_event
// (as "store" and "connection" events at RoutedLineLevel), when on_event is set.
void RouteLinesToEvents(ReceiverOptions& options);

}  // namespace writ::receiver
