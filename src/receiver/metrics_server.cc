#include "receiver/metrics_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "common/thread.h"

namespace writ::receiver {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxRequestBytes = 8192;
constexpr auto kClientDeadline = std::chrono::seconds(5);

std::string Response(const char* status, const char* type, const std::string& body,
                     bool with_body) {
  std::string out = std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n";
  if (std::string_view(status).substr(0, 3) == "405") out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (with_body) out += body;
  return out;
}

// Waits until `fd` is ready for `events`; false at the deadline or once `wake` is readable
// (the server stops: a slow client does not hold it).
bool WaitFor(int fd, short events, int wake, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {wake, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return false;
    if (fds[1].revents != 0) return false;
    if (fds[0].revents != 0) return true;
  }
}

// Reads the request line and headers (up to the blank line); empty when the client sent
// none in time, "!" when it sent more than kMaxRequestBytes without ending them.
std::string ReadRequest(int fd, int wake, Clock::time_point deadline) {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    if (request.size() > kMaxRequestBytes) return "!";
    if (!WaitFor(fd, POLLIN, wake, deadline)) return "";
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return "";
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return "";
    }
    request.append(buffer, static_cast<size_t>(n));
  }
  return request;
}

void WriteAll(int fd, int wake, const std::string& data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    if (!WaitFor(fd, POLLOUT, wake, deadline)) return;
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return;
    }
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

std::string MetricsHttpResponse(std::string_view request,
                                const std::function<std::string()>& render) {
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (request == "!") return Response("431 Request Header Fields Too Large", kText, "", true);
  const size_t line_end = request.find_first_of("\r\n");
  const std::string_view line = request.substr(0, line_end);
  const size_t first = line.find(' ');
  const size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.substr(second + 1).substr(0, 5) != "HTTP/") {
    return Response("400 Bad Request", kText, "bad request\n", true);
  }
  const std::string_view method = line.substr(0, first);
  std::string_view path = line.substr(first + 1, second - first - 1);
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return Response("405 Method Not Allowed", kText, "only GET /metrics\n", true);
  }
  if (path != "/metrics") {
    return Response("404 Not Found", kText, "not found: try /metrics\n", !head);
  }
  return Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render(), !head);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host, uint16_t port,
                                                            std::function<std::string()> render) {
  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  auto listener = protocol::ControlListener::Listen(host, port);
  if (!listener.ok()) return listener.status().Annotate("--metrics");
  server->listener_.emplace(std::move(listener).value());
  server->wake_ = protocol::Socket(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!server->wake_.valid()) {
    return Status::Io("--metrics: eventfd: " + protocol::ErrnoText(errno), errno);
  }
  server->render_ = std::move(render);
  MetricsServer* raw = server.get();
  WRIT_RETURN_IF_ERROR(StartThread(server->thread_, "the metrics thread", [raw] { raw->Run(); }));
  return server;
}

MetricsServer::~MetricsServer() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(wake_.fd(), &one, sizeof one);
  thread_.join();
}

void MetricsServer::Run() {
  for (;;) {
    pollfd fds[2] = {{listener_->fd(), POLLIN, 0}, {wake_.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    protocol::Socket client(
        ::accept4(listener_->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (client.valid()) Answer(std::move(client));
  }
}

void MetricsServer::Answer(protocol::Socket client) {
  const auto deadline = Clock::now() + kClientDeadline;
  const std::string request = ReadRequest(client.fd(), wake_.fd(), deadline);
  if (request.empty()) return;
  WriteAll(client.fd(), wake_.fd(), MetricsHttpResponse(request, render_), deadline);
  ::shutdown(client.fd(), SHUT_WR);
  // A lingering close: what the client still sends (an oversized request) is read and
  // dropped until it closes, so closing with unread bytes does not reset the connection
  // before the client has read the answer.
  char drop[4096];
  for (size_t dropped = 0; dropped < 16 * kMaxRequestBytes;) {
    if (!WaitFor(client.fd(), POLLIN, wake_.fd(), deadline)) return;
    const ssize_t n = ::recv(client.fd(), drop, sizeof drop, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
    if (n > 0) dropped += static_cast<size_t>(n);
  }
}

}  // namespace writ::receiver
