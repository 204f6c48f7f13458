// EtcdClient against a stand-in gateway that answers what etcd never should: the reply is
// the coordination service failing (ErrorCode::kTransport, exit 4), not bad user input.
#include "cluster/etcd_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace writ::cluster {
namespace {

// Accepts one HTTP request on 127.0.0.1 and answers it with `body` (HTTP 200).
class OneReplyGateway {
 public:
  explicit OneReplyGateway(std::string body) : body_(std::move(body)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 1) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    server_ = std::thread([this] { Serve(); });
  }
  ~OneReplyGateway() {
    shutdown(fd_, SHUT_RDWR);
    if (server_.joinable()) server_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return port_ != 0; }

 private:
  void Serve() {
    const int conn = accept(fd_, nullptr, nullptr);
    if (conn < 0) return;
    std::string request;
    char buf[4096];
    // The request's headers, then its body (Content-Length, small): read until quiet.
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = read(conn, buf, sizeof buf);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    const std::string reply =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
    (void)!write(conn, reply.data(), reply.size());
    close(conn);
  }

  std::string body_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread server_;
};

TEST(EtcdClient, AReplyThatIsNotJsonIsATransportFailure) {
  OneReplyGateway gateway("<html>proxy error</html>");
  ASSERT_TRUE(gateway.ok());
  auto client = EtcdClient::Open(gateway.url());
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto kvs = client->Prefix("writ/members/");
  ASSERT_FALSE(kvs.ok());
  EXPECT_EQ(kvs.status().code(), ErrorCode::kTransport) << kvs.status().message();
  EXPECT_NE(kvs.status().message().find("malformed reply"), std::string::npos);
}

TEST(EtcdClient, AKeyThatIsNotBase64IsATransportFailure) {
  OneReplyGateway gateway(R"({"kvs":[{"key":"***","value":"e30="}]})");
  ASSERT_TRUE(gateway.ok());
  auto client = EtcdClient::Open(gateway.url());
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto kvs = client->Prefix("writ/members/");
  ASSERT_FALSE(kvs.ok());
  EXPECT_EQ(kvs.status().code(), ErrorCode::kTransport) << kvs.status().message();
}

TEST(EtcdClient, ALeaseIdThatIsNotANumberIsATransportFailureNotACrash) {
  OneReplyGateway gateway(R"({"ID":"not-a-number","TTL":"10"})");
  ASSERT_TRUE(gateway.ok());
  auto client = EtcdClient::Open(gateway.url());
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto lease = client->GrantLease(10);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), ErrorCode::kTransport) << lease.status().message();
}

}  // namespace
}  // namespace writ::cluster
