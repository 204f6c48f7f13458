// One owned file descriptor, plus the poll()-based waiting the control
// connection needs. No call here blocks past its deadline.
#pragma once

#include <chrono>
#include <string>

#include "writ/status.h"

namespace writ::protocol {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Close();

 private:
  int fd_ = -1;
};

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT) or the deadline
// passes (Timeout, naming `what`). Retries on EINTR.
Status WaitReady(int fd, short events, Clock::time_point deadline, std::string_view what);

Status SetNonBlocking(int fd);

// "127.0.0.1:7000" or "[::1]:7000" for a connected or bound socket address.
std::string FormatSockaddr(const void* sockaddr, unsigned length);

// "Connection refused" for errno values.
std::string ErrnoText(int err);

}  // namespace writ::protocol
