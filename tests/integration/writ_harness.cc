#include "writ_harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/pattern.h"

namespace writ::testing {

using namespace std::chrono_literals;

// WRIT_TEST_BINARY runs the same tests against another build (e.g. to show that a test
// fails on the code before a fix).
std::string WritBinary() {
  const char* other = std::getenv("WRIT_TEST_BINARY");
  return other != nullptr && *other != '\0' ? other : WRIT_BINARY;
}

void WritePatternFile(const std::string& path, uint64_t stream, uint64_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::vector<uint8_t> block(1 << 20);
  for (uint64_t off = 0; off < bytes; off += block.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), bytes - off));
    FillPattern(stream, off, block.data(), n);
    out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
  }
  ASSERT_TRUE(out.good()) << "writing " << path;
}

void WriteSparseFile(const std::string& path, uint64_t bytes) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  close(fd);
}

std::unique_ptr<Serve> Serve::Start(const std::string& provider, std::vector<std::string> extra) {
  return StartAs({}, provider, std::move(extra));
}

std::unique_ptr<Serve> Serve::StartWithStderr(const std::string& provider,
                                              std::vector<std::string> extra) {
  return StartAs({}, provider, std::move(extra), /*merge_stderr=*/true);
}

Result<std::string> Serve::ReadLineStartingWith(const std::string& prefix,
                                                std::chrono::milliseconds timeout) {
  for (auto it = early_lines_.begin(); it != early_lines_.end(); ++it) {
    if (it->rfind(prefix, 0) == 0) {
      std::string line = std::move(*it);
      early_lines_.erase(early_lines_.begin(), it + 1);
      return line;
    }
  }
  early_lines_.clear();
  return proc_->ReadLineStartingWith(prefix, timeout);
}

std::unique_ptr<Serve> Serve::StartAs(std::vector<std::string> wrapper, const std::string& provider,
                                      std::vector<std::string> extra, bool merge_stderr) {
  std::vector<std::string> argv = std::move(wrapper);
  if (!argv.empty() && argv[0].find('/') == std::string::npos) argv[0] = "/usr/bin/" + argv[0];
  argv.insert(argv.end(), {WritBinary(), "serve", "--listen", "127.0.0.1:0"});
  if (!provider.empty()) {
    argv.push_back("--provider");
    argv.push_back(provider);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto proc = ChildProcess::Start(argv, merge_stderr);
  if (!proc.ok()) {
    ADD_FAILURE() << proc.status().ToString();
    return nullptr;
  }
  auto serve = std::unique_ptr<Serve>(new Serve());
  serve->proc_ = std::make_unique<ChildProcess>(std::move(proc).value());
  const std::string kListening = "writ: listening on ";
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  Result<std::string> line = Status::Timeout("not yet");
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    line = serve->proc_->ReadLine(std::max(left, std::chrono::milliseconds(0)));
    if (!line.ok() || line->rfind(kListening, 0) == 0) break;
    serve->early_lines_.push_back(*line);
  }
  if (!line.ok()) {
    ADD_FAILURE() << "writ serve never said it was listening: " << line.status().ToString();
    return nullptr;
  }
  // "writ: listening on HOST:PORT (provider NAME)"
  std::istringstream in(line->substr(kListening.size()));
  std::string paren;
  in >> serve->address_ >> paren >> serve->provider_;
  if (!serve->provider_.empty() && serve->provider_.back() == ')') serve->provider_.pop_back();
  return serve;
}

Serve::~Serve() {
  if (!stopped_) Stop();
}

int Serve::Stop() {
  stopped_ = true;
  proc_->Kill(SIGTERM);
  auto code = proc_->Wait(60s);
  return code.ok() ? *code : -1;
}

std::unique_ptr<ChildProcess> StartWrit(const std::vector<std::string>& args,
                                        const std::string& err_path) {
  std::vector<std::string> argv = {WritBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto proc = ChildProcess::Start(argv, false, err_path);
  if (!proc.ok()) {
    ADD_FAILURE() << proc.status().ToString();
    return nullptr;
  }
  return std::make_unique<ChildProcess>(std::move(proc).value());
}

CommandRun FinishWrit(ChildProcess& proc, const std::string& err_path) {
  CommandRun run;
  auto out = proc.ReadAll(600s);
  run.out = out.ok() ? *out : "";
  auto code = proc.Wait(600s);
  run.exit_code = code.ok() ? *code : -1;
  run.max_rss_kib = proc.max_rss_kib();
  std::ifstream err(err_path);
  std::stringstream buf;
  buf << err.rdbuf();
  run.err = buf.str();
  run.json = nlohmann::json::parse(run.out, nullptr, false);
  return run;
}

CommandRun RunWrit(const std::vector<std::string>& args) {
  TempDir dir;
  const std::string err_path = dir.File("stderr");
  auto proc = StartWrit(args, err_path);
  if (!proc) return {};
  return FinishWrit(*proc, err_path);
}

std::vector<std::string> Rungs(const nlohmann::json& out) {
  std::vector<std::string> rungs;
  if (!out.is_object() || !out.contains("receipts")) return rungs;
  for (const auto& r : out["receipts"]) rungs.push_back(r.value("rung", "?"));
  return rungs;
}

bool ProviderAvailable(const std::string& provider) {
  // A receiver that starts on the provider is the real check.
  std::vector<std::string> argv = {WritBinary(),  "serve",      "--listen",
                                   "127.0.0.1:0", "--provider", provider};
  auto proc = ChildProcess::Start(argv, true);
  if (!proc.ok()) return false;
  auto line = proc->ReadLine(30s);
  proc->Kill(SIGTERM);
  (void)proc->Wait(30s);
  return line.ok() && line->rfind("writ: listening on", 0) == 0;
}

}  // namespace writ::testing
