#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>

extern char** environ;

namespace writ::testing {
namespace {
using Clock = std::chrono::steady_clock;
}

Result<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv, bool merge_stderr,
                                         const std::string& stderr_path) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return Status::Io("pipe", errno);
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return Status::Io("pipe", errno);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  if (merge_stderr) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 2);
  } else if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return Status::Io("posix_spawn " + argv[0] + ": " + std::strerror(rc), rc);
  }
  ChildProcess child;
  child.pid_ = pid;
  child.stdin_fd_ = in_pipe[1];
  child.stdout_fd_ = out_pipe[0];
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      buffer_(std::move(other.buffer_)),
      eof_(other.eof_),
      exit_code_(other.exit_code_) {}

// A child killed by a signal cannot unlink the libfabric shm region named after its pid
// ("<pid>:<domain>:<endpoint>"). Left behind, it costs /dev/shm space and, once the pid
// comes round again, an FI_EBUSY for whoever gets it; tidy up as libfabric would.
namespace {
void RemoveShmRegionsOf(pid_t pid) {
  namespace fs = std::filesystem;
  const std::string prefix = std::to_string(pid) + ":";
  std::error_code ec;
  for (fs::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) fs::remove(it->path(), ec);
  }
}
}  // namespace

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    RemoveShmRegionsOf(pid_);
  }
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

Status ChildProcess::Fill(std::chrono::milliseconds timeout) {
  pollfd pfd{stdout_fd_, POLLIN, 0};
  const int ready = poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready == 0) return Status::Timeout("child wrote nothing within the timeout");
  if (ready < 0) return errno == EINTR ? Status::Ok() : Status::Io("poll", errno);
  char buf[4096];
  const ssize_t n = read(stdout_fd_, buf, sizeof buf);
  if (n == 0) {
    eof_ = true;
    return Status::Transport("child closed its stdout (EOF)");
  }
  if (n < 0) return errno == EINTR ? Status::Ok() : Status::Io("read", errno);
  buffer_.append(buf, static_cast<size_t>(n));
  return Status::Ok();
}

Result<std::string> ChildProcess::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (eof_) return Status::Transport("child closed its stdout (EOF); partial: " + buffer_);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Status::Timeout("no line within the timeout; partial: " + buffer_);
    Status filled = Fill(left);
    if (!filled.ok() && filled.code() != ErrorCode::kTransport) return filled;
  }
}

Result<std::string> ChildProcess::ReadLineStartingWith(const std::string& prefix,
                                                       std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    WRIT_ASSIGN_OR_RETURN(std::string line, ReadLine(std::max(left, std::chrono::milliseconds(0))));
    if (line.rfind(prefix, 0) == 0) return line;
  }
}

Result<std::string> ChildProcess::ReadAll(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!eof_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Status::Timeout("child kept its stdout open");
    Status filled = Fill(left);
    if (!filled.ok() && filled.code() != ErrorCode::kTransport) return filled;
  }
  return std::exchange(buffer_, std::string());
}

Status ChildProcess::WriteLine(const std::string& line) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(stdin_fd_, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Io("write to child stdin", errno);
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

void ChildProcess::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

Result<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_code_) return *exit_code_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    rusage usage{};
    const pid_t r = wait4(pid_, &status, WNOHANG, &usage);
    if (r == pid_) {
      max_rss_kib_ = usage.ru_maxrss;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (WIFSIGNALED(status)) RemoveShmRegionsOf(pid_);
      return *exit_code_;
    }
    if (r < 0) return Status::Io("waitpid", errno);
    if (Clock::now() >= deadline) return Status::Timeout("child did not exit in time");
    // Polling waitpid: a child exit is not an fd event we can wait on portably here.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void ChildProcess::Kill(int signal) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, signal);
}

}  // namespace writ::testing
