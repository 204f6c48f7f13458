// A real child process for two-process tests: argv, a pipe to its stdin, a pipe
// from its stdout read line by line with a timeout. Killed if still running when
// the owner goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::testing {

class ChildProcess {
 public:
  // stderr goes to `stderr_path` when given (else it is inherited); `merge_stderr`
  // sends it into the stdout pipe instead.
  static Result<ChildProcess> Start(const std::vector<std::string>& argv, bool merge_stderr = false,
                                    const std::string& stderr_path = "");
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  // One line of stdout without its newline; Timeout or "EOF" (Transport) otherwise.
  Result<std::string> ReadLine(std::chrono::milliseconds timeout);
  // Reads lines until one starts with `prefix`; returns that line.
  Result<std::string> ReadLineStartingWith(const std::string& prefix,
                                           std::chrono::milliseconds timeout);
  // Everything left on stdout until EOF (or the timeout).
  Result<std::string> ReadAll(std::chrono::milliseconds timeout);
  Status WriteLine(const std::string& line);
  void CloseStdin();

  // Waits for exit; returns the exit code, or 128+signal.
  Result<int> Wait(std::chrono::milliseconds timeout);
  void Kill(int signal);
  pid_t pid() const { return pid_; }
  // Peak resident set size of the exited child (wait4's ru_maxrss), in KiB.
  long max_rss_kib() const { return max_rss_kib_; }

 private:
  ChildProcess() = default;
  Status Fill(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
  std::optional<int> exit_code_;
  long max_rss_kib_ = 0;
};

}  // namespace writ::testing
