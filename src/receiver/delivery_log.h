// What a receiver tells its log (ReceiverOptions::on_event) and its metrics about each
// delivery: the rungs it reached, each refusal, and how it ended.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/messages.h"
#include "receiver/metrics.h"
#include "writ/receiver.h"
#include "writ/types.h"

namespace writ::receiver {

struct ReceiverCore;

// The rungs one delivery reached so far, for the log and the metrics.
struct RungsReached {
  std::chrono::steady_clock::time_point announced = std::chrono::steady_clock::now();
  std::optional<ReceiptRung> reached;  // the highest rung issued
  // The highest rung below `retained`, and whether `retained` was issued: the log's words
  // are the sender's ("reached: validated, retention volatile").
  std::optional<ReceiptRung> ladder_reached;
  bool retained = false;
};

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

// Deliveries that ended retained, counted between one "deliveries" info line and the next
// (at most one a second, the first at once), so that the log keeps up with thousands of
// small deliveries a second; each one's own line is debug. Lock-free.
class RetainedSummary {
 public:
  // Counts one; true when this caller is to log the line now (Take() gives its figures).
  bool Note(uint64_t bytes, std::chrono::steady_clock::time_point now);
  struct Counts {
    uint64_t deliveries = 0;
    uint64_t bytes = 0;
  };
  // What was counted since the last Take, zeroed.
  Counts Take();

 private:
  std::atomic<uint64_t> deliveries_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<int64_t> next_line_ns_{0};  // steady clock; 0: the next delivery logs at once
};

double SecondsSince(std::chrono::steady_clock::time_point since);

// A receipt rung issued for a delivery of `bytes`: its latency, and the bytes once every
// chunk landed.
void NoteRung(ReceiverCore& core, RungsReached& rungs, uint64_t bytes, ReceiptRung rung);
// A refusal sent (or meant for a sender that left): counted and logged.
void NoteRefusal(ReceiverCore& core, const protocol::Refuse& refuse);
// Counts and logs one delivery's outcome line.
void ReportEnded(ReceiverCore& core, const EndedDelivery& ended);

// The "deliveries" line for what was retained since the last one, when anything was (at
// shutdown, so that the last second's deliveries are not left uncounted).
void ReportRetainedSummary(ReceiverCore& core);

// The level of a store or connection line: info for the routine ones (an expiry, a
// shutdown, an idle or silent connection closed), warning for everything else.
LogEvent::Level RoutedLineLevel(const std::string& line);

// `options` with its on_store_event and on_connection_event lines also reaching on_event
// (as "store" and "connection" events at RoutedLineLevel), when on_event is set.
void RouteLinesToEvents(ReceiverOptions& options);

}  // namespace writ::receiver
