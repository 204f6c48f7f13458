// What `writ serve` prints: the receiver's log events (writ/receiver.h LogEvent) as text
// ("writ: ..." lines) or JSON (one object a line: ts, level, event, message, fields), on
// stderr; the ready lines (listening, metrics) on stdout, even with --quiet. Thread-safe:
// each line is one write(2).
#pragma once

#include <string>
#include <vector>

#include "common/mutex.h"
#include "writ/receiver.h"

namespace writ::cli {

class ServeLog {
 public:
  ServeLog(bool json, bool quiet, bool verbose = false)
      : json_(json), quiet_(quiet), verbose_(verbose) {}

  // A log event; with --quiet only warnings and errors; debug lines only with --verbose.
  void Emit(const LogEvent& event);
  void Info(const std::string& event, const std::string& message) {
    Emit(LogEvent{LogEvent::Level::kInfo, event, message, {}});
  }
  // A line scripts wait for (stdout, never quieted).
  void Ready(const std::string& event, const std::string& message, std::vector<LogField> fields);
  // The line for `event`, with its newline.
  std::string Format(const LogEvent& event) const;

 private:
  void Write(int fd, const std::string& line);

  const bool json_;
  const bool quiet_;
  const bool verbose_;
  Mutex mu_;
};

}  // namespace writ::cli
