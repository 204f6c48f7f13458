// Running the real `writ` binary in tests: a `writ serve` child, `writ send`
// runs with their JSON output, exit code, stderr and peak memory.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "child_process.h"
#include "temp_dir.h"

namespace writ::testing {

std::string WritBinary();

// Writes `bytes` of the position-dependent pattern of `stream`.
void WritePatternFile(const std::string& path, uint64_t stream, uint64_t bytes);
// A sparse file of `bytes` zeros (fast to create and to read, no disk blocks).
void WriteSparseFile(const std::string& path, uint64_t bytes);

class Serve {
 public:
  // Starts `writ serve --listen 127.0.0.1:0 --provider P ARGS...` and waits for its
  // "writ: listening on ..." line.
  static std::unique_ptr<Serve> Start(const std::string& provider,
                                      std::vector<std::string> extra = {});
  // The same, with `wrapper` (e.g. setpriv ...) in front of the writ binary.
  static std::unique_ptr<Serve> StartAs(std::vector<std::string> wrapper,
                                        const std::string& provider,
                                        std::vector<std::string> extra = {},
                                        bool merge_stderr = false);
  // Start, with the serve's stderr lines (store events) readable by ReadLineStartingWith.
  static std::unique_ptr<Serve> StartWithStderr(const std::string& provider,
                                                std::vector<std::string> extra = {});
  ~Serve();
  const std::string& address() const { return address_; }
  const std::string& provider() const { return provider_; }
  ChildProcess& process() { return *proc_; }
  // SIGTERM, then the exit code.
  int Stop();
  long max_rss_kib() const { return proc_->max_rss_kib(); }
  // The next line starting with `prefix`, including lines printed before the serve said
  // it was listening (a store event may come first).
  Result<std::string> ReadLineStartingWith(const std::string& prefix,
                                           std::chrono::milliseconds timeout);

 private:
  std::vector<std::string> early_lines_;  // read while waiting for "listening on"
  std::unique_ptr<ChildProcess> proc_;
  std::string address_, provider_;
  bool stopped_ = false;
};

struct CommandRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  nlohmann::json json;  // stdout parsed, when it is JSON
  long max_rss_kib = 0;
};

// Runs `writ ARGS...` to completion.
CommandRun RunWrit(const std::vector<std::string>& args);

// Starts `writ ARGS...` without waiting (stdout captured, stderr to `err_path`).
std::unique_ptr<ChildProcess> StartWrit(const std::vector<std::string>& args,
                                        const std::string& err_path);
CommandRun FinishWrit(ChildProcess& proc, const std::string& err_path);

std::vector<std::string> Rungs(const nlohmann::json& send_output);

// Providers usable here for two-process tests.
bool ProviderAvailable(const std::string& provider);

}  // namespace writ::testing
