// GET /metrics over HTTP/1.1 on its own thread, for a Prometheus scrape: one request per
// connection, one connection at a time, a bounded request (8 KiB of request line and
// headers) read within a deadline, 404 for any other path. Closed by its destructor.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "protocol/control_channel.h"
#include "protocol/socket.h"
#include "writ/status.h"

namespace writ::receiver {

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
  MetricsServer() = default;
  void Run();
  void Answer(protocol::Socket client);

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
