// The receiver's metrics registry (src/receiver/metrics.h) as Prometheus text exposition
// format 0.0.4, and the HTTP responder's answers (metrics_server.h).
#include "receiver/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <sstream>
#include <vector>

#include "receiver/delivery_log.h"
#include "receiver/metrics_server.h"

namespace writ::receiver {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Has(const std::string& text, const std::string& line) {
  for (const auto& l : Lines(text)) {
    if (l == line) return true;
  }
  return false;
}

TEST(Metrics, CountersMoveAndAreExposedWithTheirLabels) {
  Metrics metrics;
  metrics.DeliveryEnded(DeliveryOutcome::kRetained, ReceiptRung::kRetained,
                        RetentionClass::kPowerLoss);
  metrics.DeliveryEnded(DeliveryOutcome::kRetained, ReceiptRung::kRetained,
                        RetentionClass::kPowerLoss);
  metrics.DeliveryEnded(DeliveryOutcome::kAborted, ReceiptRung::kTransport,
                        RetentionClass::kVolatile);
  metrics.BytesReceived(4096);
  metrics.BytesReceived(100);
  metrics.Refused(protocol::RefuseReason::kValidation);
  metrics.Refused(protocol::RefuseReason::kShuttingDown);
  metrics.Scrubbed(ScrubResult::kQuarantined);
  metrics.WindowRegistered();
  metrics.WindowRegistered();
  metrics.ExposedBytes(1 << 20, 0);
  metrics.ExposedBytes(0, 512);
  const std::string text = metrics.Render(MetricGauges{8, 3, 2, 1 << 20, 4096});
  EXPECT_TRUE(Has(
      text, "writ_deliveries_total{outcome=\"retained\",rung=\"retained\",class=\"power-loss\"} 2"))
      << text;
  EXPECT_TRUE(
      Has(text, "writ_deliveries_total{outcome=\"aborted\",rung=\"none\",class=\"volatile\"} 1"));
  EXPECT_TRUE(
      Has(text, "writ_deliveries_total{outcome=\"refused\",rung=\"none\",class=\"volatile\"} 0"));
  EXPECT_TRUE(Has(text, "writ_received_bytes_total 4196"));
  EXPECT_TRUE(Has(text, "writ_windows_registered_total 2"));
  EXPECT_TRUE(Has(text, "writ_exposed_bytes_total{how=\"in_place\"} 1048576"));
  EXPECT_TRUE(Has(text, "writ_exposed_bytes_total{how=\"copied\"} 512"));
  EXPECT_TRUE(Has(text, "writ_refusals_total{reason=\"validation\"} 1"));
  EXPECT_TRUE(Has(text, "writ_refusals_total{reason=\"auth\"} 0"));
  EXPECT_TRUE(Has(text, "writ_refusals_total{reason=\"shutting_down\"} 1"));
  EXPECT_TRUE(Has(text, "writ_scrub_results_total{result=\"quarantined\"} 1"));
  EXPECT_TRUE(Has(text, "writ_windows 8"));
  EXPECT_TRUE(Has(text, "writ_windows_in_use 3"));
  EXPECT_TRUE(Has(text, "writ_deliveries_in_progress 2"));
  EXPECT_TRUE(Has(text, "writ_volatile_capacity_bytes 1048576"));
  EXPECT_TRUE(Has(text, "writ_volatile_capacity_used_bytes 4096"));
}

TEST(Metrics, ARefusalAtTheAnnounceIsARefusedDeliveryWithNoRung) {
  Metrics metrics;
  metrics.RefusedAtAnnounce(RetentionClass::kPowerLoss);
  const std::string text = metrics.Render(MetricGauges{});
  EXPECT_NE(
      text.find("writ_deliveries_total{outcome=\"refused\",rung=\"none\",class=\"power-loss\"} 1"),
      std::string::npos)
      << text;
}

// Routine lines are info, anything an operator may need to act on a warning.
TEST(ServeLogLevels, RoutineStoreAndConnectionLinesAreInfo) {
  using Level = LogEvent::Level;
  EXPECT_EQ(RoutedLineLevel("store: removed delivery a (volatile, 3 bytes): its time-to-live "
                            "passed (its receipt promised it until 2026-01-01T00:00:00.000Z)"),
            Level::kInfo);
  EXPECT_EQ(RoutedLineLevel("connection from 127.0.0.1:5 closed: idle (no delivery in progress, "
                            "no message) for the idle timeout of 60000 ms"),
            Level::kInfo);
  EXPECT_EQ(RoutedLineLevel("shutting down: admitting nothing new; 0 deliveries in progress"),
            Level::kInfo);
  EXPECT_EQ(RoutedLineLevel("store: removed delivery a (volatile, 3 bytes): removed by an "
                            "operator; PROMISE BROKEN: its retained receipt promised it until x"),
            Level::kWarning);
  EXPECT_EQ(RoutedLineLevel("store: delivery a is no longer retained: re-verification failed"),
            Level::kWarning);
  EXPECT_EQ(RoutedLineLevel("delivery a aborted: the sender closed its connection"),
            Level::kWarning);
}

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  Metrics metrics;
  metrics.RungReached(ReceiptRung::kValidated, 0.003);  // in le="0.005"
  metrics.RungReached(ReceiptRung::kValidated, 0.2);    // in le="0.25"
  metrics.RungReached(ReceiptRung::kValidated, 1000);   // only in +Inf
  metrics.StoreCommitted(RetentionClass::kPowerLoss, 0.01);
  const std::string text = metrics.Render({});
  const std::string v = "writ_rung_latency_seconds_bucket{rung=\"validated\",le=";
  EXPECT_TRUE(Has(text, v + "\"0.0025\"} 0")) << text;
  EXPECT_TRUE(Has(text, v + "\"0.005\"} 1"));
  EXPECT_TRUE(Has(text, v + "\"0.1\"} 1"));
  EXPECT_TRUE(Has(text, v + "\"0.25\"} 2"));
  EXPECT_TRUE(Has(text, v + "\"120\"} 2"));
  EXPECT_TRUE(Has(text, v + "\"+Inf\"} 3"));
  EXPECT_TRUE(Has(text, "writ_rung_latency_seconds_count{rung=\"validated\"} 3"));
  EXPECT_TRUE(Has(text, "writ_rung_latency_seconds_sum{rung=\"validated\"} 1000.203"));
  EXPECT_TRUE(Has(text, "writ_rung_latency_seconds_count{rung=\"received\"} 0"));
  EXPECT_TRUE(Has(text, "writ_store_commit_seconds_count{class=\"power-loss\"} 1"));
  EXPECT_TRUE(Has(text, "writ_store_commit_seconds_bucket{class=\"power-loss\",le=\"0.01\"} 1"));
}

// Every sample belongs to a family announced by HELP and TYPE lines before it; names
// follow the conventions (writ_ prefix; counters end in _total).
TEST(Metrics, EveryFamilyHasHelpAndTypeBeforeItsSamples) {
  Metrics metrics;
  std::set<std::string> typed;
  std::string type_of_last;
  for (const std::string& line : Lines(metrics.Render({}))) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream in(line.substr(7));
      std::string name, type;
      in >> name >> type;
      EXPECT_EQ(name.rfind("writ_", 0), 0u) << line;
      if (type == "counter") {
        EXPECT_TRUE(name.ends_with("_total")) << line;
      }
      EXPECT_TRUE(typed.insert(name).second) << "announced twice: " << line;
      type_of_last = name;
      continue;
    }
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind(type_of_last, 0), 0u) << line << " after the TYPE of " << type_of_last;
  }
  for (const char* family :
       {"writ_deliveries_total", "writ_received_bytes_total", "writ_rung_latency_seconds",
        "writ_refusals_total", "writ_store_commit_seconds", "writ_scrub_results_total",
        "writ_windows_in_use", "writ_volatile_capacity_used_bytes", "writ_windows_registered_total",
        "writ_exposed_bytes_total"}) {
    EXPECT_TRUE(typed.count(family)) << family;
  }
}

TEST(MetricsHttp, AnswersGetMetricsAndNothingElse) {
  auto render = [] { return std::string("writ_x_total 1\n"); };
  const std::string ok = MetricsHttpResponse("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", render);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("Content-Length: 15\r\n"), std::string::npos);
  EXPECT_TRUE(ok.ends_with("\r\n\r\nwrit_x_total 1\n"));
  const std::string query = MetricsHttpResponse("GET /metrics?x=1 HTTP/1.0\r\n\r\n", render);
  EXPECT_EQ(query.rfind("HTTP/1.1 200 OK", 0), 0u);
  const std::string head = MetricsHttpResponse("HEAD /metrics HTTP/1.1\r\n\r\n", render);
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << "HEAD has no body";
  EXPECT_EQ(MetricsHttpResponse("GET / HTTP/1.1\r\n\r\n", render).rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(MetricsHttpResponse("POST /metrics HTTP/1.1\r\n\r\n", render).rfind("HTTP/1.1 405", 0),
            0u);
  EXPECT_EQ(MetricsHttpResponse("garbage\r\n\r\n", render).rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(MetricsHttpResponse("!", render).rfind("HTTP/1.1 431", 0), 0u);
}

// A connected client of `server` ("127.0.0.1:PORT"); -1 on failure.
int Connect(const MetricsServer& server) {
  const std::string& address = server.address();
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Exchange(int fd, const std::string& request) {
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  close(fd);
  return response;
}

// Over a real socket: a scrape, an oversized request (431, the server goes on), and a
// client that never sends a byte does not keep the server from stopping.
TEST(MetricsHttp, ServesOverASocketAndStopsWithAClientMidRequest) {
  auto server = MetricsServer::Start("127.0.0.1", 0, [] { return std::string("writ_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string big = "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n";
  EXPECT_EQ(Exchange(Connect(**server), big).rfind("HTTP/1.1 431", 0), 0u);
  const std::string ok = Exchange(Connect(**server), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
  EXPECT_TRUE(ok.ends_with("\r\n\r\nwrit_up 1\n")) << ok;
  const int silent = Connect(**server);
  ASSERT_GE(silent, 0);
  server->reset();  // returns although `silent` is still connected, mid-request
  close(silent);
}

// 16 connections that never send a byte, then a scrape: it is answered while every one of
// them is still open (before, the server held each silent client for its 5 s deadline in
// turn, closing all 16 before it read the scrape: 80 s).
TEST(MetricsHttp, SilentClientsDoNotDelayAScrape) {
  auto server = MetricsServer::Start("127.0.0.1", 0, [] { return std::string("writ_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::vector<int> silent;
  for (int i = 0; i < 16; ++i) {
    silent.push_back(Connect(**server));
    ASSERT_GE(silent.back(), 0);
  }
  const std::string ok = Exchange(Connect(**server), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
  int still_open = 0;
  for (int fd : silent) {
    char byte;
    const ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++still_open;
    close(fd);
  }
  EXPECT_EQ(still_open, 16) << "the scrape waited for silent clients to be closed";
}

// More silent connections than the server serves at once: the oldest are closed to make
// room, and a scrape is still answered.
TEST(MetricsHttp, MoreSilentClientsThanSlotsDoNotLockOutAScrape) {
  auto server = MetricsServer::Start("127.0.0.1", 0, [] { return std::string("writ_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::vector<int> silent;
  for (size_t i = 0; i < kMaxMetricsClients + 8; ++i) silent.push_back(Connect(**server));
  const std::string ok = Exchange(Connect(**server), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
  for (int fd : silent) close(fd);
}

}  // namespace
}  // namespace writ::receiver
