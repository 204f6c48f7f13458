// GET /metrics over HTTP/1.1 on its own thread, for a Prometheus scrape: one request per
// connection, up to kMaxMetricsClients connections served at once (each with its own
// 5 s deadline from its accept; when all are taken the oldest is closed for a new one),
// a bounded request (8 KiB of request line and headers), 404 for any other path. Closed
// by its destructor.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/control_channel.h"
#include "protocol/socket.h"
#include "writ/status.h"

namespace writ::receiver {

inline constexpr size_t kMaxMetricsClients = 64;

class MetricsServer {
 public:
  // Listens on host:port (port 0: the kernel picks); `render` is called for each scrape,
  // on the server's thread.
  static Result<std::unique_ptr<MetricsServer>> Start(const std::string& host, uint16_t port,
                                                      std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // "127.0.0.1:9464"
  const std::string& address() const { return listener_->address(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    protocol::Socket socket;
    Clock::time_point deadline;  // closed then, whatever it is doing
    std::string in;              // the request so far
    std::string out;             // the answer, once the request is complete
    size_t sent = 0;
    size_t dropped = 0;  // bytes read and dropped after the answer (a lingering close)
  };

  MetricsServer() = default;
  void Run();
  void Accept(std::vector<Client>& clients, Clock::time_point now);
  bool Step(Client& c);

  std::optional<protocol::ControlListener> listener_;
  protocol::Socket wake_;  // an eventfd: written once to stop the thread
  std::function<std::string()> render_;
  std::thread thread_;
};

// The response to one request (its request line and headers): status line, headers, body.
// Exposed for tests.
std::string MetricsHttpResponse(std::string_view request,
                                const std::function<std::string()>& render);

}  // namespace writ::receiver
