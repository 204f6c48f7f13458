// `writ serve --metrics`, `--log-format json` and `--quiet` (issue #16): a real serve, real
// `writ send`s, a real HTTP scrape of GET /metrics (checked by `promtool check metrics`
// when the Debian package `prometheus` is installed) and the serve's own log lines.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// One HTTP/1.1 GET of `path` from "HOST:PORT"; the whole response, or "" on failure.
std::string HttpGet(const std::string& address, const std::string& path) {
  const size_t colon = address.rfind(':');
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) return "";
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
    }
  }
  close(fd);
  return response;
}

std::string Body(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// The value of the sample line `name` (labels included) in an exposition, or -1.
double Sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(ServeMetrics, AScrapeCountsRealDeliveriesAndPassesPromtool) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  auto serve =
      Serve::StartWithStderr("tcp", {"--identity", dir.File("id"), "--metrics", "127.0.0.1:0",
                                     "--data", dir.File("data"), "--scrub-rate", "64MiB"});
  ASSERT_TRUE(serve);
  const std::string kMetrics = "writ: metrics on http://";
  auto line = serve->ReadLineStartingWith(kMetrics, 10s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  const std::string address =
      line->substr(kMetrics.size(), line->rfind("/metrics") - kMetrics.size());

  WritePatternFile(dir.File("a"), 1, 4096);
  WritePatternFile(dir.File("b"), 2, 1 << 20);
  CommandRun a = RunWrit({"send", dir.File("a"), "--to", serve->address(), "--id", "a"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  CommandRun b = RunWrit(
      {"send", dir.File("b"), "--to", serve->address(), "--id", "b", "--retention", "power-loss"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  CommandRun c = RunWrit({"send", dir.File("a"), "--to", serve->address(), "--id", "b"});
  EXPECT_NE(c.exit_code, 0) << "other content under a retained id is refused";

  const std::string response = HttpGet(address, "/metrics");
  ASSERT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const std::string text = Body(response);
  EXPECT_EQ(
      Sample(text,
             "writ_deliveries_total{outcome=\"retained\",rung=\"retained\",class=\"volatile\"}"),
      1)
      << text;
  EXPECT_EQ(
      Sample(text,
             "writ_deliveries_total{outcome=\"retained\",rung=\"retained\",class=\"power-loss\"}"),
      1);
  EXPECT_EQ(Sample(text, "writ_received_bytes_total"), 4096 + (1 << 20));
  EXPECT_EQ(Sample(text, "writ_refusals_total{reason=\"conflicting_id\"}"), 1);
  // Refused (at its announce when the digest came with it): one refused delivery either way.
  double refused = 0;
  for (const char* rung : {"none", "transport", "received", "validated", "processed", "retained"}) {
    const double n = Sample(text, std::string("writ_deliveries_total{outcome=\"refused\",rung=\"") +
                                      rung + "\",class=\"volatile\"}");
    refused += n > 0 ? n : 0;  // -1: no such series (a receiver issues no transport rung)
  }
  EXPECT_EQ(refused, 1) << text;
  EXPECT_EQ(Sample(text, "writ_rung_latency_seconds_count{rung=\"validated\"}"), 2);
  EXPECT_EQ(Sample(text, "writ_store_commit_seconds_count{class=\"power-loss\"}"), 1);
  EXPECT_EQ(Sample(text, "writ_deliveries_in_progress"), 0);
  EXPECT_EQ(HttpGet(address, "/").rfind("HTTP/1.1 404", 0), 0u);
  // The scrub re-hashes the power-loss delivery (a pass at most every second).
  std::string scrubbed = text;
  for (int i = 0; i < 300 && Sample(scrubbed, "writ_scrub_results_total{result=\"passed\"}") < 1;
       ++i) {
    std::this_thread::sleep_for(100ms);
    scrubbed = Body(HttpGet(address, "/metrics"));
  }
  EXPECT_GE(Sample(scrubbed, "writ_scrub_results_total{result=\"passed\"}"), 1) << scrubbed;

  if (access("/usr/bin/promtool", X_OK) != 0) {
    std::cout << "promtool step skipped: /usr/bin/promtool is missing (Debian package "
                 "`prometheus`; scripts/install-deps.sh installs it)\n";
    return;
  }
  std::ofstream(dir.File("scrape.txt")) << text;
  const std::string check = "/usr/bin/promtool check metrics < " + dir.File("scrape.txt") + " > " +
                            dir.File("promtool.txt") + " 2>&1";
  const int rc = std::system(check.c_str());
  std::stringstream said;
  said << std::ifstream(dir.File("promtool.txt")).rdbuf();
  EXPECT_EQ(rc, 0) << "promtool check metrics: " << said.str();
}

// Every line the serve writes parses as JSON with ts, level and event; with --verbose a
// delivery's outcome is one of them (debug), beside the "deliveries" count (info).
TEST(ServeLog, JsonLinesParseAndNameTheDeliveryOutcome) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  auto proc = ChildProcess::Start(
      {WritBinary(), "serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--identity",
       dir.File("id"), "--log-format", "json", "--data", dir.File("data"), "--verbose"},
      /*merge_stderr=*/true);
  ASSERT_TRUE(proc.ok()) << proc.status().ToString();
  std::string address;
  bool recovery = false;  // the data directory's recovery, before the serve listens
  for (int i = 0; i < 20 && address.empty(); ++i) {
    auto line = proc->ReadLine(30s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    json event = json::parse(*line, nullptr, false);
    ASSERT_FALSE(event.is_discarded()) << *line;
    if (event.value("event", "") == "listening") address = event.value("address", "");
    if (event.value("event", "") == "recovery") recovery = true;
  }
  ASSERT_FALSE(address.empty());
  EXPECT_TRUE(recovery) << "no recovery event before the ready line";
  WritePatternFile(dir.File("payload"), 5, 8192);
  CommandRun sent = RunWrit({"send", dir.File("payload"), "--to", address, "--id", "logged"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  // Other bytes under the same id: a refusal, and a refused outcome.
  WritePatternFile(dir.File("other"), 6, 8192);
  CommandRun refused = RunWrit({"send", dir.File("other"), "--to", address, "--id", "logged"});
  ASSERT_NE(refused.exit_code, 0);
  proc->Kill(SIGTERM);
  ASSERT_TRUE(proc->Wait(60s).ok());
  auto rest = proc->ReadAll(10s);
  ASSERT_TRUE(rest.ok());
  std::istringstream in(*rest);
  json outcome, refusal, refused_outcome;
  uint64_t summarised = 0;
  for (std::string line; std::getline(in, line);) {
    json event = json::parse(line, nullptr, false);
    ASSERT_FALSE(event.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(event.contains("ts") && event.contains("level") && event.contains("event")) << line;
    const std::string name = event.value("event", "");
    if (name == "refusal") refusal = event;
    if (name == "deliveries") {
      EXPECT_EQ(event.value("level", ""), "info") << line;
      summarised += event.value("retained", 0u);
    }
    if (name != "delivery") continue;
    (event.value("outcome", "") == "refused" ? refused_outcome : outcome) = event;
  }
  ASSERT_TRUE(refusal.is_object()) << *rest;
  EXPECT_EQ(refusal.value("id", ""), "logged");
  EXPECT_EQ(refusal.value("reason", ""), "conflicting id");
  EXPECT_EQ(refusal.value("level", ""), "warning");
  // Whether the bytes moved first depends on the sender announcing its digest (then
  // admission refuses, and there was no delivery to end); when they did, it ended refused.
  if (refused_outcome.is_object()) {
    EXPECT_EQ(refused_outcome.value("reason", ""), "conflicting id");
  }
  ASSERT_TRUE(outcome.is_object()) << *rest;
  EXPECT_EQ(outcome.value("id", ""), "logged");
  EXPECT_EQ(outcome.value("outcome", ""), "retained");
  EXPECT_EQ(outcome.value("rung", ""), "retained");
  EXPECT_EQ(outcome.value("class", ""), "volatile");
  EXPECT_EQ(outcome.value("bytes", 0u), 8192u);
  EXPECT_EQ(outcome.value("level", ""), "debug");
  EXPECT_TRUE(outcome["elapsed_seconds"].is_number());
  EXPECT_EQ(summarised, 1u) << *rest;
}

// Without --verbose a retained delivery has no line of its own: it is counted in the
// "deliveries" line (the first at once, then at most one a second, the rest at shutdown).
TEST(ServeLog, RetainedDeliveriesAreCountedNotLinedByDefault) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  auto serve = Serve::StartWithStderr("tcp", {"--identity", dir.File("id")});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("data"), 7, 4096);
  for (const char* id : {"counted-1", "counted-2", "counted-3"}) {
    CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", id});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
  }
  EXPECT_EQ(serve->Stop(), 0);
  auto rest = serve->process().ReadAll(10s);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->find("outcome of delivery"), std::string::npos) << *rest;
  // The first delivery's line at once; the other two in one more line, within the second
  // or at shutdown.
  uint64_t counted = 0;
  std::istringstream in(*rest);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(" retained (");
    if (line.rfind("writ: ", 0) != 0 || at == std::string::npos) continue;
    if (line.size() < 7 || line[6] < '0' || line[6] > '9') continue;
    counted += std::stoull(line.substr(6, line.find(' ', 6) - 6));
  }
  EXPECT_EQ(counted, 3u) << *rest;
}

// --quiet: the ready line still comes, no per-delivery line does.
TEST(ServeLog, QuietPrintsNoPerDeliveryLines) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  auto serve = Serve::StartWithStderr("tcp", {"--identity", dir.File("id"), "--quiet"});
  ASSERT_TRUE(serve);
  WritePatternFile(dir.File("data"), 6, 4096);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", "hush"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(serve->Stop(), 0);
  auto rest = serve->process().ReadAll(10s);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->find("hush"), std::string::npos) << *rest;
  EXPECT_EQ(rest->find("outcome of delivery"), std::string::npos) << *rest;
}

}  // namespace
}  // namespace writ::testing
