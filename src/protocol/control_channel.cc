#include "protocol/control_channel.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <memory>
#include <string>

#include "protocol/validate.h"

namespace writ::protocol {
namespace {

struct AddrinfoFree {
  void operator()(addrinfo* ai) const { ::freeaddrinfo(ai); }
};
using AddrinfoPtr = std::unique_ptr<addrinfo, AddrinfoFree>;

std::string HostPort(const std::string& host, uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string out;  // append(), not `"[" + host`: see FormatSockaddr
  out.append(ipv6 ? "[" : "").append(host).append(ipv6 ? "]:" : ":");
  return out.append(std::to_string(port));
}

Result<AddrinfoPtr> Resolve(const std::string& host, uint16_t port, bool passive,
                            const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const bool any = passive && (host.empty() || host == "*");
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(any ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    return Status::Transport(what + ": cannot resolve \"" + host + "\": " + ::gai_strerror(rc));
  }
  return AddrinfoPtr(list);
}

Status SetNoDelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Status::Io("setsockopt(TCP_NODELAY): " + ErrnoText(errno), errno);
  }
  return Status::Ok();
}

// Connects one resolved address before the deadline. Timeout ends the whole
// attempt; any other error lets the caller try the next address.
Status ConnectOne(const addrinfo& ai, Clock::time_point deadline, const std::string& what,
                  Socket& out) {
  Socket sock(
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!sock.valid()) return Status::Transport(what + ": socket: " + ErrnoText(errno));
  if (::connect(sock.fd(), ai.ai_addr, ai.ai_addrlen) != 0) {
    // A non-blocking connect interrupted by a signal still proceeds.
    if (errno != EINPROGRESS && errno != EINTR) {
      return Status::Transport(what + ": " + ErrnoText(errno));
    }
    WRIT_RETURN_IF_ERROR(WaitReady(sock.fd(), POLLOUT, deadline, what));
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return Status::Transport(what + ": " + ErrnoText(err));
  }
  out = std::move(sock);
  return Status::Ok();
}

std::string PeerName(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown peer";
  return FormatSockaddr(&addr, len);
}

}  // namespace

ControlChannel::ControlChannel(Socket socket, Limits limits, std::string peer)
    : socket_(std::move(socket)), limits_(limits), reader_(limits), peer_(std::move(peer)) {}

Result<ControlChannel> ControlChannel::Connect(std::string host, uint16_t port,
                                               std::chrono::milliseconds timeout, Limits limits) {
  const std::string what = "connect to " + HostPort(host, port);
  if (port == 0) return Status::InvalidArgument(what + ": port 0");
  const auto deadline = Clock::now() + timeout;
  WRIT_ASSIGN_OR_RETURN(AddrinfoPtr list, Resolve(host, port, false, what));
  Status last = Status::Transport(what + ": no address");
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    Socket sock;
    last = ConnectOne(*ai, deadline, what, sock);
    if (last.ok()) return Adopt(std::move(sock), limits);
    if (last.code() == ErrorCode::kTimeout) return last;
  }
  return last;
}

Result<ControlChannel> ControlChannel::Adopt(Socket socket, Limits limits) {
  if (!socket.valid()) return Status::InvalidArgument("control channel: no socket");
  WRIT_RETURN_IF_ERROR(SetNonBlocking(socket.fd()));
  WRIT_RETURN_IF_ERROR(SetNoDelay(socket.fd()));
  std::string peer = PeerName(socket.fd());
  return ControlChannel(std::move(socket), limits, std::move(peer));
}

Status ControlChannel::Send(const Message& message) {
  Status valid = Validate(message, limits_, /*parse_json=*/false);
  if (!valid.ok()) return Status::InvalidArgument("send: " + valid.message());
  const size_t held = out_.size();
  const size_t frame_bytes = EncodeAppend(message, out_);
  if (frame_bytes > limits_.max_frame_bytes) {
    out_.resize(held);
    return Status::InvalidArgument("send: " + std::string(MessageTypeName(message)) + " frame of " +
                                   std::to_string(frame_bytes) + " bytes exceeds the limit of " +
                                   std::to_string(limits_.max_frame_bytes));
  }
  ++out_messages_;
  if (corked_) return Status::Ok();
  return WriteOut(MessageTypeName(message));
}

void ControlChannel::Cork() { corked_ = true; }

Status ControlChannel::Uncork() {
  corked_ = false;
  if (out_.empty()) return Status::Ok();
  return WriteOut(out_messages_ == 1 ? "a message" : std::to_string(out_messages_) + " messages");
}

Status ControlChannel::WriteOut(std::string_view sending) {
  const auto deadline = Clock::now() + send_timeout_;
  size_t sent = 0;
  Status status;
  while (sent < out_.size()) {
    const ssize_t n = ::send(socket_.fd(), out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const std::string what = "send " + std::string(sending) + " to " + peer_;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      status = WaitReady(socket_.fd(), POLLOUT, deadline, what);
      if (status.ok()) continue;
      // Half a frame went out: the stream can never be parsed again.
      if (sent > 0) Shutdown();
      break;
    }
    status = Status::Transport(what + ": " + ErrnoText(errno));
    break;
  }
  out_.clear();  // keeps its capacity for the next frames
  out_messages_ = 0;
  return status;
}

Result<Message> ControlChannel::Receive(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // A pass of receipts for 64 deliveries is a few hundred KiB: 64 KiB a read keeps that to a
  // handful of system calls (16 KiB took one per 4 receipts).
  std::array<uint8_t, 65536> buf;
  for (;;) {
    WRIT_ASSIGN_OR_RETURN(std::optional<Message> next, reader_.Next());
    if (next) return std::move(*next);
    // The last read took less than it could: the socket had nothing more then, and a caller
    // that only takes what has arrived (timeout 0) is told so without another system call.
    // Its own poll of fd() sees anything that came since.
    const bool drained = drained_;
    drained_ = false;
    if (drained && timeout.count() <= 0) return Status::Timeout(ReceiveWhat() + ": timed out");
    const ssize_t n = ::recv(socket_.fd(), buf.data(), buf.size(), 0);
    if (n > 0) {
      drained_ = static_cast<size_t>(n) < buf.size();
      WRIT_RETURN_IF_ERROR(reader_.Feed(std::span(buf.data(), static_cast<size_t>(n))));
      continue;
    }
    if (n == 0) {
      if (reader_.buffered_bytes() > 0) {
        return Status::Transport(ReceiveWhat() + ": peer closed the connection mid-frame (" +
                                 std::to_string(reader_.buffered_bytes()) +
                                 " bytes of an incomplete frame)");
      }
      return Status::Transport(ReceiveWhat() + ": peer closed the connection");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Nothing now: a poll only when there is time left to wait in.
      if (Clock::now() >= deadline) return Status::Timeout(ReceiveWhat() + ": timed out");
      WRIT_RETURN_IF_ERROR(WaitReady(socket_.fd(), POLLIN, deadline, ReceiveWhat()));
      continue;
    }
    if (errno == ECONNRESET) return Status::Transport(ReceiveWhat() + ": connection reset by peer");
    return Status::Transport(ReceiveWhat() + ": " + ErrnoText(errno));
  }
}

std::string ControlChannel::ReceiveWhat() const { return "receive from " + peer_; }

void ControlChannel::Shutdown() {
  if (socket_.valid()) ::shutdown(socket_.fd(), SHUT_RDWR);
}

Result<ControlListener> ControlListener::Listen(std::string host, uint16_t port, Limits limits) {
  const std::string what = "listen on " + HostPort(host, port);
  WRIT_ASSIGN_OR_RETURN(AddrinfoPtr list, Resolve(host, port, true, what));
  Status last = Status::Transport(what + ": no address");
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    Socket sock(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!sock.valid()) {
      last = Status::Transport(what + ": socket: " + ErrnoText(errno));
      continue;
    }
    const int one = 1;
    ::setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(sock.fd(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(sock.fd(), 64) != 0) {
      last = Status::Transport(what + ": " + ErrnoText(errno));
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last = Status::Io(what + ": getsockname: " + ErrnoText(errno), errno);
      continue;
    }
    const uint16_t bound_port = bound.ss_family == AF_INET6
                                    ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return ControlListener(std::move(sock), limits, bound_port, FormatSockaddr(&bound, len));
  }
  return last;
}

void ControlListener::Shutdown() { (void)::shutdown(socket_.fd(), SHUT_RDWR); }

Result<ControlChannel> ControlListener::Accept(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string what = "accept on " + address_;
  for (;;) {
    WRIT_RETURN_IF_ERROR(WaitReady(socket_.fd(), POLLIN, deadline, what));
    Socket conn(::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (conn.valid()) return ControlChannel::Adopt(std::move(conn), limits_);
    // The connection went away before we took it, or a signal came: wait again.
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) {
      continue;
    }
    return Status::Io(what + ": " + ErrnoText(errno), errno);
  }
}

}  // namespace writ::protocol
