#include "protocol/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace writ::protocol {

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
  }
  return *this;
}

int Socket::Release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::Close() {
  if (fd_ >= 0) {
    // Linux releases the descriptor even when close() reports EINTR: never retry.
    ::close(fd_);
    fd_ = -1;
  }
}

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may not be `buf`.
  return ::strerror_r(err, buf, sizeof buf);
}

Status WaitReady(int fd, short events, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    const int timeout_ms =
        left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
    pollfd pfd{fd, events, 0};
    const int n = ::poll(&pfd, 1, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Io(std::string(what) + ": poll: " + ErrnoText(errno), errno);
    }
    // Errors and hang-ups are reported by the read or write that follows.
    if (n > 0) return Status::Ok();
    if (timeout_ms == 0) return Status::Timeout(std::string(what) + ": timed out");
  }
}

Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status::Io("fcntl(O_NONBLOCK): " + ErrnoText(errno), errno);
  }
  return Status::Ok();
}

std::string FormatSockaddr(const void* sockaddr, unsigned length) {
  char host[INET6_ADDRSTRLEN] = {};
  const auto* sa = static_cast<const struct sockaddr*>(sockaddr);
  // Built with append(): GCC 12 reports a bogus -Wrestrict for `"[" + std::string`.
  std::string out;
  if (sa->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = static_cast<const sockaddr_in*>(sockaddr);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    out.append(host).append(":").append(std::to_string(ntohs(in->sin_port)));
  } else if (sa->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = static_cast<const sockaddr_in6*>(sockaddr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    out.append("[").append(host).append("]:").append(std::to_string(ntohs(in6->sin6_port)));
  } else {
    out = "unknown address";
  }
  return out;
}

}  // namespace writ::protocol
