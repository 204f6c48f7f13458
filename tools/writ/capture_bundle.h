// `writ capture`'s second half: the journals the interposer (src/capture) wrote, one per
// process, turned into a writ.evidence/1 bundle (contract revision 2) of what was
// observed: no deliveries, no claims (capture does not know what the program meant),
// the completions read, the notifications received, the context, and under "capture"
// every work request posted (docs/audit.md, "Capture").
#pragma once

#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::cli {

struct CaptureRun {
  std::vector<std::string> command;  // PROGRAM ARGS...
  std::string exit;                  // "exited 0", "killed by signal 11"
};

struct CaptureCounts {
  uint64_t processes = 0, endpoints = 0, work_requests = 0, completions = 0, errors = 0;
};

// The bundle's text from the journals' texts (NUL padding and a last line cut short by
// a crash are dropped).
Result<std::string> BuildCaptureBundle(const std::vector<std::string>& journals,
                                       const CaptureRun& run, CaptureCounts& counts);

}  // namespace writ::cli
