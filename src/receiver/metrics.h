// A receiver's metrics: counters and histograms updated with relaxed atomics (nothing on
// a delivery's path takes a lock), rendered in the Prometheus text exposition format 0.0.4.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "protocol/messages.h"
#include "store/durable_store.h"
#include "writ/types.h"

namespace writ::receiver {

// Upper bounds (seconds) of every latency histogram's buckets; +Inf is implied.
inline constexpr std::array<double, 18> kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    120};

class LatencyHistogram {
 public:
  void Observe(double seconds);
  // `name{labels,le="..."}` bucket lines, then _sum and _count; `labels` may be empty.
  void Render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets_{};  // last: +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

// How a delivery ended: its receipts all went out, it was refused, or it was abandoned
// (the sender aborted or vanished, a timeout, the shutdown).
enum class DeliveryOutcome : uint8_t { kRetained, kRefused, kAborted };
inline constexpr size_t kOutcomes = 3;
std::string_view OutcomeName(DeliveryOutcome outcome);

using ScrubResult = store::ScrubFinding;  // one per retained delivery re-hashed
inline constexpr size_t kScrubResults = 3;

// Values read when the metrics are rendered, not kept up to date on the hot path.
struct MetricGauges {
  uint64_t windows = 0;
  uint64_t windows_in_use = 0;
  uint64_t deliveries_in_progress = 0;
  uint64_t volatile_capacity_bytes = 0;
  uint64_t volatile_used_bytes = 0;
};

class Metrics {
 public:
  // `reached`: the highest receipt rung issued, nullopt-like kTransport when none.
  void DeliveryEnded(DeliveryOutcome outcome, ReceiptRung reached, RetentionClass retention);
  // Refused at its announce, before any receipt: outcome "refused", rung "none".
  void RefusedAtAnnounce(RetentionClass retention);
  // A receipt rung issued `seconds` after its delivery's announce.
  void RungReached(ReceiptRung rung, double seconds) { Rung(rung).Observe(seconds); }
  void BytesReceived(uint64_t bytes) { received_bytes_.fetch_add(bytes, kRelaxed); }
  void Refused(protocol::RefuseReason reason);
  void StoreCommitted(RetentionClass retention, double seconds);
  void Scrubbed(ScrubResult result) { Count(scrubs_[static_cast<size_t>(result)]); }
  // A window registered for a delivery's chunks (one memory registration).
  void WindowRegistered() { Count(windows_registered_); }
  // Bytes of an addressed delivery consumed where they landed in the application's buffer,
  // or copied into it (ExposedWriter::Write).
  void ExposedBytes(uint64_t in_place, uint64_t copied) {
    if (in_place > 0) exposed_in_place_bytes_.fetch_add(in_place, kRelaxed);
    if (copied > 0) exposed_copied_bytes_.fetch_add(copied, kRelaxed);
  }

  std::string Render(const MetricGauges& gauges) const;

 private:
  static constexpr std::memory_order kRelaxed = std::memory_order_relaxed;
  static void Count(std::atomic<uint64_t>& counter) { counter.fetch_add(1, kRelaxed); }
  LatencyHistogram& Rung(ReceiptRung rung) { return rungs_[static_cast<size_t>(rung)]; }
  void RenderDeliveries(std::string& out) const;
  void RenderRefusals(std::string& out) const;
  void RenderLatencies(std::string& out) const;

  // [outcome][rung: none, received, validated, processed, retained][class - 1]
  std::array<std::array<std::array<std::atomic<uint64_t>, 3>, 5>, kOutcomes> deliveries_{};
  std::atomic<uint64_t> received_bytes_{0};
  std::atomic<uint64_t> windows_registered_{0};
  std::atomic<uint64_t> exposed_in_place_bytes_{0};
  std::atomic<uint64_t> exposed_copied_bytes_{0};
  std::array<LatencyHistogram, 5> rungs_;             // by ReceiptRung (kTransport unused)
  std::array<std::atomic<uint64_t>, 16> refusals_{};  // by RefuseReason value
  std::array<LatencyHistogram, 3> commits_;           // by RetentionClass - 1
  std::array<std::atomic<uint64_t>, kScrubResults> scrubs_{};
};

}  // namespace writ::receiver
