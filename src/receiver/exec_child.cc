#include "receiver/exec_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace writ::receiver {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBlockBytes = 64 << 10;  // the delivery goes to the command a block at a time

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

Status Errno(const std::string& what) {
  return Status::Io(what + ": " + std::strerror(errno), errno);
}

// A pipe whose ends close on exec; the receiver's end does not block.
Status MakePipe(Fd& read_end, Fd& write_end, bool receiver_reads) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return Errno("pipe2");
  read_end = Fd(ends[0]);
  write_end = Fd(ends[1]);
  const int own = receiver_reads ? ends[0] : ends[1];
  if (fcntl(own, F_SETFL, fcntl(own, F_GETFL) | O_NONBLOCK) != 0) return Errno("fcntl");
  return Status::Ok();
}

// The receiver's environment, with the request's variables in place of any of the same name.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto same_name = [&](const std::string& x) {
      const size_t eq = x.find('=');
      return entry.substr(0, entry.find('=')) == std::string_view(x).substr(0, eq);
    };
    if (std::none_of(extra.begin(), extra.end(), same_name)) out.emplace_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// /bin/sh -c COMMAND: stdin from `in`, stdout and stderr to `out`, every other descriptor
// closed, in a new process group, with default signal handling and nothing blocked.
Result<pid_t> Spawn(const ExecRequest& request, int in, int out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, out, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);  // a receiver ignores SIGPIPE: the command must not inherit that
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> env = Environment(request.environment);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = request.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, sh.c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::Io("cannot start /bin/sh: " + std::string(std::strerror(rc)), rc);
  return pid;
}

// SIGPIPE blocked in this thread while it writes to a command that may not read; one it
// raised is taken away again, so an embedding application without SIG_IGN is not ended.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() {
    if (!was_pending_) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

// Watches one started command until it exits, times out or is stopped.
class Watch {
 public:
  Watch(const ExecRequest& request, pid_t pid, Fd in, Fd out)
      : request_(request), pid_(pid), in_(std::move(in)), out_(std::move(out)) {
    pidfd_ = Fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (request_.bytes == 0) in_.Close();
  }
  Result<ExecOutcome> Run();

 private:
  Status Feed();
  void Drain();
  bool Exited();
  void KillGroup() { (void)kill(-pid_, SIGKILL); }
  Result<ExecOutcome> Finish(ExecOutcome::End end);

  const ExecRequest& request_;
  pid_t pid_;
  Fd in_, out_, pidfd_;
  uint64_t sent_ = 0;
  std::vector<uint8_t> block_;
  size_t block_at_ = 0;
  ExecOutcome outcome_;
};

Result<ExecOutcome> Watch::Run() {
  for (;;) {
    if (request_.stop_requested && request_.stop_requested()) {
      return Finish(ExecOutcome::End::kStopped);
    }
    const auto left = request_.deadline - Clock::now();
    if (left <= Clock::duration::zero()) return Finish(ExecOutcome::End::kTimedOut);
    // Without a pidfd (or to look at stop_requested) the wait is a short one.
    const bool tick = pidfd_.get() < 0 || request_.stop_requested;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    pollfd fds[3] = {{in_.get(), POLLOUT, 0}, {out_.get(), POLLIN, 0}, {pidfd_.get(), POLLIN, 0}};
    if (poll(fds, 3, static_cast<int>(std::min<int64_t>(ms, tick ? 50 : 60000))) < 0 &&
        errno != EINTR) {
      KillGroup();
      (void)Exited();
      return Errno("poll");
    }
    if (fds[1].revents != 0) Drain();
    if (fds[0].revents != 0) {
      if (Status fed = Feed(); !fed.ok()) {
        (void)Finish(ExecOutcome::End::kStopped);
        return fed;
      }
    }
    if (Exited()) return outcome_;
  }
}

// Writes what the pipe takes of the delivery; a command that stops reading is not an error.
Status Watch::Feed() {
  while (in_.get() >= 0) {
    if (block_at_ == block_.size()) {
      if (sent_ == request_.bytes) {
        in_.Close();  // end of file for the command
        return Status::Ok();
      }
      block_.resize(std::min<uint64_t>(kBlockBytes, request_.bytes - sent_));
      WRIT_RETURN_IF_ERROR(request_.read(sent_, block_));
      block_at_ = 0;
    }
    const ssize_t n = write(in_.get(), block_.data() + block_at_, block_.size() - block_at_);
    if (n < 0 && errno == EAGAIN) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      in_.Close();  // EPIPE: the command does not read (all of) its input
      return Status::Ok();
    }
    block_at_ += static_cast<size_t>(n);
    sent_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Reads what output is there, keeping the last output_limit bytes.
void Watch::Drain() {
  char buffer[4096];
  while (out_.get() >= 0) {
    const ssize_t n = read(out_.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      out_.Close();
      return;
    }
    outcome_.output.append(buffer, static_cast<size_t>(n));
    if (outcome_.output.size() > 2 * request_.output_limit) {
      const size_t drop = outcome_.output.size() - request_.output_limit;
      outcome_.output.erase(0, drop);
      outcome_.output_dropped += drop;
    }
  }
}

// Once the shell has exited (still unreaped, so its group id cannot be reused): what it
// left running in its group is killed, its output read, and it is reaped.
bool Watch::Exited() {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid_) {
    return false;
  }
  KillGroup();
  Drain();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  outcome_.end = WIFSIGNALED(status) ? ExecOutcome::End::kSignaled : ExecOutcome::End::kExited;
  outcome_.code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
  if (outcome_.output.size() > request_.output_limit) {
    const size_t drop = outcome_.output.size() - request_.output_limit;
    outcome_.output.erase(0, drop);
    outcome_.output_dropped += drop;
  }
  return true;
}

// The group killed, the shell reaped; `end` says why.
Result<ExecOutcome> Watch::Finish(ExecOutcome::End end) {
  KillGroup();
  while (!Exited()) {
    pollfd fd{pidfd_.get(), POLLIN, 0};
    (void)poll(&fd, 1, 10);
  }
  outcome_.end = end;
  return outcome_;
}

}  // namespace

Result<ExecOutcome> RunCommand(const ExecRequest& request) {
  Fd in_read, in_write, out_read, out_write;
  WRIT_RETURN_IF_ERROR(MakePipe(in_read, in_write, /*receiver_reads=*/false));
  WRIT_RETURN_IF_ERROR(MakePipe(out_read, out_write, /*receiver_reads=*/true));
  SigpipeBlocked blocked;
  WRIT_ASSIGN_OR_RETURN(pid_t pid, Spawn(request, in_read.get(), out_write.get()));
  in_read.Close();  // the command's ends: EOF and EPIPE reach each side once the other closes
  out_write.Close();
  Watch watch(request, pid, std::move(in_write), std::move(out_read));
  return watch.Run();
}

}  // namespace writ::receiver
