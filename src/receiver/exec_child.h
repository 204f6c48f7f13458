// One run of a processing command (writ::ExecStep): `/bin/sh -c COMMAND` in a process group
// of its own, the delivery streamed to its standard input, its standard output and error
// kept (the last few KiB). A timeout or a stop request kills the whole group.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::receiver {

struct ExecRequest {
  std::string command;
  std::vector<std::string> environment;  // "NAME=value", added to the receiver's own
  uint64_t bytes = 0;                    // streamed to the command's standard input
  std::function<Status(uint64_t offset, std::span<uint8_t> out)> read;
  std::chrono::steady_clock::time_point deadline;
  std::function<bool()> stop_requested;  // may be empty
  size_t output_limit = 4096;            // the output kept: its last bytes
};

struct ExecOutcome {
  enum class End { kExited, kSignaled, kTimedOut, kStopped };
  End end = End::kExited;
  int code = 0;                 // the exit status (kExited) or the signal (kSignaled)
  std::string output;           // standard output and error together, the last output_limit bytes
  uint64_t output_dropped = 0;  // earlier bytes of output not kept
};

// Error only when the command could not be started or watched (pipes, spawn, a read of the
// delivery that failed); then nothing of it is left running.
Result<ExecOutcome> RunCommand(const ExecRequest& request);

}  // namespace writ::receiver
