#include "progress_bar.h"

#include <cstdio>

#include "writ/vocabulary.h"

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

double WriteRate(uint64_t bytes_written, double write_seconds) {
  return write_seconds > 0 ? static_cast<double>(bytes_written) / write_seconds : 0.0;
}

std::string PhaseAfterLastChunk(std::optional<ReceiptRung> latest, Rung until,
                                std::optional<RetentionClass> retention) {
  const bool validated =
      latest && (*latest == ReceiptRung::kValidated || *latest == ReceiptRung::kProcessed);
  if (!validated) return "validating";
  if (until == Rung::kProcessed && *latest != ReceiptRung::kProcessed) return "processing";
  if (retention && *retention != RetentionClass::kVolatile) {
    return "syncing (" + std::string(RetentionName(*retention)) + ")";
  }
  return "waiting for the retained receipt";
}

double ProgressBar::WrittenSeconds(Clock::time_point now) const {
  return std::chrono::duration<double>(written_at_.value_or(now) - start_).count();
}

void ProgressBar::Draw(Clock::time_point now, const std::string& tail) {
  last_draw_ = now;
  const double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %s / %s  %s/s  %s\033[K", filled,
               "##############################", kWidth - filled, "", frac * 100.0,
               HumanBytes(static_cast<double>(done_)).c_str(),
               HumanBytes(static_cast<double>(total_)).c_str(),
               HumanBytes(WriteRate(done_, WrittenSeconds(now))).c_str(), tail.c_str());
  std::fflush(stderr);
  open_line_ = true;
}

void ProgressBar::Update(uint64_t done, uint64_t total) {
  const Clock::time_point now = Clock::now();
  done_ = done;
  total_ = total;
  if (done >= total && !written_at_) written_at_ = now;
  if (done < total && open_line_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  const double rate = WriteRate(done, WrittenSeconds(now));
  const std::string tail =
      done >= total ? "written in " + HumanDuration(WrittenSeconds(now)) + "; validating"
      : rate > 0    ? HumanDuration(static_cast<double>(total - done) / rate) + " left"
                    : "--:-- left";
  Draw(now, tail);
}

void ProgressBar::Phase(const std::string& phase) {
  if (!written_at_) return;  // chunks still going: the bar shows those
  const Clock::time_point now = Clock::now();
  Draw(now, "written in " + HumanDuration(WrittenSeconds(now)) + "; " + phase);
}

void ProgressBar::Finish() {
  if (!open_line_) return;
  if (written_at_) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    Draw(Clock::now(), "written in " + HumanDuration(WrittenSeconds(Clock::now())) + "; done in " +
                           HumanDuration(elapsed));
  }
  std::fputc('\n', stderr);
  std::fflush(stderr);
  open_line_ = false;
}

}  // namespace writ::cli
