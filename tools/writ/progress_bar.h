// `writ send`'s progress bar on stderr: bytes, rate and time left, redrawn in place.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace writ::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressBar(Clock::time_point start) : start_(start) {}

  // Called on every chunk that completes; redraws at most every 100 ms, and at the end.
  void Update(uint64_t done, uint64_t total);
  // Ends the bar's line if one is drawn and not ended (a send that failed half-way).
  void Finish();

 private:
  Clock::time_point start_;
  Clock::time_point last_draw_{};
  bool open_line_ = false;
};

// "24.0 MiB", "512 B"
std::string HumanBytes(double bytes);
// "1:05", "0:03", "2:01:40"
std::string HumanDuration(double seconds);

}  // namespace writ::cli
