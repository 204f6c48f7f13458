// small_delivery_bench: N small deliveries, one after another, each until `validated`,
// through the public API against a running `writ serve`, two ways:
//   one-shot: writ::Send per delivery (control connection, fabric setup and staging
//             registration paid every time);
//   session:  one writ::Sender, N deliveries on it.
//   inflight: one writ::Sender, N deliveries of the file's bytes submitted at once, up to
//             --in-flight (64) in flight (the receiver's --max-deliveries-per-sender
//             bounds it too): deliveries per second, and the process's CPU seconds.
// Reports median, p99 and p99.9 latency and deliveries per second for each. With --big-file,
// also sends that file --big-count times through the session and reports GB/s.
//   small_delivery_bench --to HOST:PORT --file PATH [--count 200]
//                        [--mode both|oneshot|session|inflight|all] [--in-flight 64]
//                        [--big-file PATH [--big-count 3] [--chunk-size 8MiB]]
//                        [--source auto|zero-copy|staging] [--poll block|busy] [--ring on|off]
//                        [--distinct] [--identity DIR] [--json]
// --distinct: inflight mode sends `count` different buffers (the file's bytes, each copy
// numbered) rather than one buffer `count` times.
// --ring off: no standing window (every delivery announced and granted), for comparison.
// --identity DIR: a signed sender (session and inflight modes): its announces and transport
// receipts signed with the key in DIR (created on first use).
// --json prints one document; its top-level median_us / p99_us / per_second are the
// session path's (bench/compare reads median_us).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "writ/sender.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Series {
  std::vector<double> micros;
  double seconds = 0;

  double Percentile(double p) const {
    if (micros.empty()) return 0;  // --count 0: only the big deliveries
    std::vector<double> v = micros;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1);
    return v[i];
  }
  nlohmann::json Json() const {
    return {{"count", micros.size()},
            {"median_us", Percentile(0.5)},
            {"p99_us", Percentile(0.99)},
            {"p999_us", Percentile(0.999)},
            {"per_second", micros.empty() ? 0.0 : micros.size() / seconds}};
  }
};

std::string RunId() { return std::to_string(Clock::now().time_since_epoch().count()); }

bool Timed(Series& s, const std::function<writ::DeliveryOutcome()>& one, int i) {
  const auto t0 = Clock::now();
  writ::DeliveryOutcome outcome = one();
  s.micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  if (!outcome.status.ok()) {
    std::cerr << "delivery " << i << ": " << outcome.status.ToString() << "\n";
    return false;
  }
  return true;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// `count` deliveries of the file's bytes submitted at once on one session. `distinct`: each
// from its own copy in memory (its first 8 bytes its number), as an application sending
// `count` different blocks has them, instead of the same cache-warm buffer every time.
bool InFlight(const std::string& to, const std::string& file, int count, uint32_t in_flight,
              bool ring, bool distinct, const std::string& identity_dir, const std::string& run_id,
              nlohmann::json& doc) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::vector<uint8_t>> copies;
  for (int i = 0; distinct && i < count; ++i) {
    copies.push_back(bytes);
    std::memcpy(copies.back().data(), &i, std::min(sizeof i, bytes.size()));
  }
  writ::SessionOptions session_options;
  session_options.to = to;
  session_options.max_in_flight = in_flight;
  session_options.ring = ring;
  session_options.identity_dir = identity_dir;
  auto sender = writ::Sender::Connect(session_options);
  if (!sender.ok()) {
    std::cerr << "connect: " << sender.status().ToString() << "\n";
    return false;
  }
  // One delivery first, untimed: its admission grants the session's ring (standing window).
  writ::DeliveryOptions warm;
  warm.id = "small-" + run_id + "-inflight-warm";
  warm.until = writ::Rung::kValidated;
  if (!(*sender)->SendBytes(bytes, warm).status.ok()) return false;
  std::vector<writ::DeliveryHandle> handles;
  handles.reserve(count);
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    writ::DeliveryOptions options;
    options.id = "small-" + run_id + "-inflight-" + std::to_string(i);
    options.until = writ::Rung::kValidated;
    handles.push_back((*sender)->SubmitBytes(distinct ? copies[i] : bytes, options));
  }
  int through_ring = 0;
  for (size_t i = 0; i < handles.size(); ++i) {
    const writ::DeliveryOutcome& outcome = handles[i].Wait();
    if (!outcome.status.ok()) {
      std::cerr << "delivery " << i << ": " << outcome.status.ToString() << "\n";
      return false;
    }
    through_ring += outcome.ring ? 1 : 0;
    // Let go of the outcome as a caller in its steady state would: 2,000 outcomes kept
    // (their receipts) would grow the session thread's heap a page at a time (an
    // mprotect each, bench/syscall_count), which is the caller's memory, not writ's cost.
    handles[i] = writ::DeliveryHandle();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  doc["inflight"] = {{"count", count},
                     {"in_flight", (*sender)->max_in_flight()},
                     {"per_second", count / seconds},
                     {"seconds", seconds},
                     {"sender_cpu_s", CpuSeconds() - cpu0},
                     {"through_ring", through_ring},
                     {"distinct", distinct}};
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"--count", "200"},   {"--mode", "both"},  {"--big-count", "3"},  {"--chunk-size", "8388608"},
      {"--source", "auto"}, {"--poll", "block"}, {"--in-flight", "64"}, {"--ring", "on"}};
  bool as_json = false;
  bool distinct = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      as_json = true;
    else if (a == "--distinct")
      distinct = true;
    else if (i + 1 < argc)
      flags[a] = argv[++i];
  }
  if (!flags.count("--to") || !flags.count("--file")) {
    std::cerr << "usage: small_delivery_bench --to HOST:PORT --file PATH [--count N] "
                 "[--mode both|oneshot|session] [--big-file PATH] [--json]\n";
    return 2;
  }
  const int count = std::stoi(flags["--count"]);
  const std::string mode = flags["--mode"];
  const std::string run_id = RunId();
  writ::SourcePath source = writ::SourcePath::kAuto;
  if (flags["--source"] == "zero-copy") source = writ::SourcePath::kZeroCopy;
  if (flags["--source"] == "staging") source = writ::SourcePath::kStaging;
  nlohmann::json doc{{"count", count}};
  if (mode == "inflight" || mode == "all") {
    if (!InFlight(flags["--to"], flags["--file"], count,
                  static_cast<uint32_t>(std::stoul(flags["--in-flight"])), flags["--ring"] != "off",
                  distinct, flags["--identity"], run_id, doc)) {
      return 1;
    }
  }

  if (mode == "both" || mode == "all" || mode == "oneshot") {
    Series s;
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      writ::SendOptions options;
      options.to = flags["--to"];
      options.busy_poll = flags["--poll"] == "busy";
      options.id = "small-" + run_id + "-oneshot-" + std::to_string(i);
      options.until = writ::Rung::kValidated;
      if (!Timed(
              s, [&] { return writ::Send(flags["--file"], options); }, i))
        return 1;
    }
    s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    doc["oneshot"] = s.Json();
  }

  if (mode == "both" || mode == "all" || mode == "session") {
    writ::SessionOptions session_options;
    session_options.to = flags["--to"];
    session_options.busy_poll = flags["--poll"] == "busy";
    session_options.ring = flags["--ring"] != "off";
    session_options.identity_dir = flags["--identity"];
    const auto c0 = Clock::now();
    auto sender = writ::Sender::Connect(session_options);
    if (!sender.ok()) {
      std::cerr << "connect: " << sender.status().ToString() << "\n";
      return 1;
    }
    doc["session_connect_us"] =
        std::chrono::duration<double, std::micro>(Clock::now() - c0).count();
    Series s;
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      writ::DeliveryOptions options;
      options.id = "small-" + run_id + "-session-" + std::to_string(i);
      options.until = writ::Rung::kValidated;
      if (!Timed(
              s, [&] { return (*sender)->Send(flags["--file"], options); }, i))
        return 1;
    }
    s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    doc["session"] = s.Json();
    doc["median_us"] = doc["session"]["median_us"];
    doc["p99_us"] = doc["session"]["p99_us"];
    doc["per_second"] = doc["session"]["per_second"];

    if (flags.count("--big-file")) {
      const int big_count = std::stoi(flags["--big-count"]);
      nlohmann::json runs = nlohmann::json::array();
      for (int i = 0; i < big_count; ++i) {
        writ::DeliveryOptions options;
        options.id = "big-" + run_id + "-" + std::to_string(i);
        options.until = writ::Rung::kValidated;
        options.chunk_size = std::stoull(flags["--chunk-size"]);
        options.source = source;
        const auto t0 = Clock::now();
        writ::DeliveryOutcome outcome = (*sender)->Send(flags["--big-file"], options);
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!outcome.status.ok()) {
          std::cerr << "big delivery " << i << ": " << outcome.status.ToString() << "\n";
          return 1;
        }
        runs.push_back({{"bytes", outcome.delivery.bytes},
                        {"seconds", secs},
                        {"gb_per_s", outcome.delivery.bytes / secs / 1e9},
                        {"source_path", outcome.source_path}});
      }
      doc["big"] = runs;
    }
  }

  if (as_json) {
    std::cout << doc.dump() << std::endl;
    return 0;
  }
  for (const char* path : {"oneshot", "session"}) {
    if (!doc.contains(path)) continue;
    const auto& s = doc[path];
    std::printf(
        "%-8s %d deliveries to validated: median %.1f us, p99 %.1f us, p99.9 %.1f us, %.0f "
        "deliveries/s\n",
        path, count, s["median_us"].get<double>(), s["p99_us"].get<double>(),
        s["p999_us"].get<double>(), s["per_second"].get<double>());
  }
  if (doc.contains("inflight")) {
    const auto& s = doc["inflight"];
    std::printf(
        "inflight %d deliveries to validated, %u in flight: %.0f deliveries/s, %.2f s CPU\n", count,
        s["in_flight"].get<unsigned>(), s["per_second"].get<double>(),
        s["sender_cpu_s"].get<double>());
  }
  if (doc.contains("session_connect_us")) {
    std::printf("session connect: %.1f us\n", doc["session_connect_us"].get<double>());
  }
  if (doc.contains("big")) {
    for (const auto& r : doc["big"]) {
      std::printf("big: %llu bytes in %.3f s = %.3f GB/s (%s)\n",
                  static_cast<unsigned long long>(r["bytes"].get<uint64_t>()),
                  r["seconds"].get<double>(), r["gb_per_s"].get<double>(),
                  r["source_path"].get<std::string>().c_str());
    }
  }
  return 0;
}
