// `writ send`'s progress bar on stderr: bytes, rate and time left while chunks are written,
// then what the send waits for (validating, processing, syncing, the retained receipt)
// until it ends, redrawn in place.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "writ/types.h"

namespace writ::cli {

// The one rate `writ send` reports (bar, summary line, --json timing): bytes written by
// chunk writes that completed, over the seconds from the send's start to the last one.
double WriteRate(uint64_t bytes_written, double write_seconds);

// What a send waits for once its last chunk is written, from the receipts it has: the
// receiver validating, running its processing step, syncing for the retention class, or
// sending the retained receipt. `until` and `retention` are what the send asked for.
std::string PhaseAfterLastChunk(std::optional<ReceiptRung> latest, Rung until,
                                std::optional<RetentionClass> retention);

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressBar(Clock::time_point start) : start_(start) {}

  // Called on every chunk that completes; redraws at most every 100 ms, and at the last.
  void Update(uint64_t done, uint64_t total);
  // After the last chunk: what the send waits for now (redrawn at once).
  void Phase(const std::string& phase);
  // Ends the bar's line if one is drawn ("done in T" when every byte was written).
  void Finish();

 private:
  void Draw(Clock::time_point now, const std::string& tail);
  double WrittenSeconds(Clock::time_point now) const;

  Clock::time_point start_;
  Clock::time_point last_draw_{};
  std::optional<Clock::time_point> written_at_;  // when the last chunk completed
  uint64_t done_ = 0;
  uint64_t total_ = 0;
  bool open_line_ = false;
};

// "24.0 MiB", "512 B"
std::string HumanBytes(double bytes);
// "1:05", "0:03", "2:01:40"
std::string HumanDuration(double seconds);

}  // namespace writ::cli
