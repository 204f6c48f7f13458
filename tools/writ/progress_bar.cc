#include "progress_bar.h"

#include <cstdio>

namespace writ::cli {

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < std::size(units)) bytes /= 1024.0, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

std::string HumanDuration(double seconds) {
  const auto total = static_cast<uint64_t>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%llu:%02llu:%02llu",
                  static_cast<unsigned long long>(total / 3600),
                  static_cast<unsigned long long>(total / 60 % 60),
                  static_cast<unsigned long long>(total % 60));
  } else {
    std::snprintf(text, sizeof text, "%llu:%02llu", static_cast<unsigned long long>(total / 60),
                  static_cast<unsigned long long>(total % 60));
  }
  return text;
}

void ProgressBar::Update(uint64_t done, uint64_t total) {
  const Clock::time_point now = Clock::now();
  if (done < total && open_line_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const std::string left = done >= total ? "done in " + HumanDuration(elapsed)
                           : rate > 0
                               ? HumanDuration(static_cast<double>(total - done) / rate) + " left"
                               : "--:-- left";
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %s / %s  %s/s  %s\033[K", filled,
               "##############################", kWidth - filled, "", frac * 100.0,
               HumanBytes(static_cast<double>(done)).c_str(),
               HumanBytes(static_cast<double>(total)).c_str(), HumanBytes(rate).c_str(),
               left.c_str());
  open_line_ = true;
  if (done >= total) Finish();
}

void ProgressBar::Finish() {
  if (!open_line_) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  open_line_ = false;
}

}  // namespace writ::cli
