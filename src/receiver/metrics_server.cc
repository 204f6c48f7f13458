#include "receiver/metrics_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

#include "common/thread.h"

namespace writ::receiver {
namespace {

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

// A request is complete at the blank line that ends its headers.
bool RequestComplete(const std::string& request) {
  return request.find("\r\n\r\n") != std::string::npos || request.find("\n\n") != std::string::npos;
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

// One thread polls the listener and every client: a client that sends nothing, or reads
// its answer slowly, holds only its own slot until its deadline, never another scrape.
void MetricsServer::Run() {
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{listener_->fd(), POLLIN, 0}, {wake_.fd(), POLLIN, 0}});
    auto next = Clock::time_point::max();
    for (const Client& c : clients) {
      fds.push_back(
          {c.socket.fd(), static_cast<short>(c.out.size() > c.sent ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    int timeout = -1;
    if (!clients.empty()) {
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count()));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    const auto now = Clock::now();
    for (size_t i = 0; i < clients.size(); ++i) {
      if (fds[i + 2].revents != 0 && !Step(clients[i])) clients[i].deadline = now;
    }
    std::erase_if(clients, [now](const Client& c) { return c.deadline <= now; });
    if ((fds[0].revents & POLLIN) != 0) Accept(clients, now);
  }
}

void MetricsServer::Accept(std::vector<Client>& clients, Clock::time_point now) {
  protocol::Socket client(
      ::accept4(listener_->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!client.valid()) return;
  if (clients.size() >= kMaxMetricsClients) {
    // Full: the client accepted first (the nearest deadline) makes room for this one.
    clients.erase(
        std::min_element(clients.begin(), clients.end(),
                         [](const auto& a, const auto& b) { return a.deadline < b.deadline; }));
  }
  clients.push_back(Client{std::move(client), now + kClientDeadline, {}, {}, 0, 0});
}

// Moves one client on by what poll reported; false when it is done with.
bool MetricsServer::Step(Client& c) {
  char buffer[4096];
  if (c.out.size() > c.sent) {
    const ssize_t n =
        ::send(c.socket.fd(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    c.sent += static_cast<size_t>(n);
    if (c.sent == c.out.size()) ::shutdown(c.socket.fd(), SHUT_WR);
    return true;
  }
  const ssize_t n = ::recv(c.socket.fd(), buffer, sizeof buffer, 0);
  if (n == 0) return false;
  if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
  if (!c.out.empty()) {
    // A lingering close: what the client still sends (an oversized request) is read and
    // dropped until it closes, so closing with unread bytes does not reset the connection
    // before the client has read the answer.
    c.dropped += static_cast<size_t>(n);
    return c.dropped < 16 * kMaxRequestBytes;
  }
  c.in.append(buffer, static_cast<size_t>(n));
  if (c.in.size() > kMaxRequestBytes && !RequestComplete(c.in)) {
    c.out = MetricsHttpResponse("!", render_);
  } else if (RequestComplete(c.in)) {
    c.out = MetricsHttpResponse(c.in, render_);
  }
  return true;
}

}  // namespace writ::receiver
