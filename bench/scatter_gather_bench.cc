// scatter_gather_bench: scatter-gather deliveries of --regions regions of --region-size
// bytes (every other page-sized piece of a buffer: no two adjacent), one after another on
// one writ::Sender session, each until `validated`, against a running `writ serve`.
// Reports p50 / p99 / p99.9 latency and the bandwidth at the median, to set beside
// `raw_write_bench --size 4KiB --depth D` (raw fi_write at the region size, same depth).
// With --contiguous, the same bytes as one contiguous SendBytes instead (zero-copy from
// 256 KiB): the difference is the cost of gathering.
//   scatter_gather_bench --to HOST:PORT [--regions 1000] [--region-size 4096] [--count 50]
//                        [--depth 4] [--chunk-size 8388608] [--contiguous] [--staging]
//                        [--json]
// --staging: regions of 256 KiB and more are gathered too instead of registered.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "writ/sender.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1)];
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"--regions", "1000"},
                                              {"--region-size", "4096"},
                                              {"--count", "50"},
                                              {"--depth", "4"},
                                              {"--chunk-size", "8388608"}};
  bool as_json = false;
  bool contiguous = false;
  bool staging = false;  // never register regions: every chunk gathered into staging
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      as_json = true;
    else if (a == "--contiguous")
      contiguous = true;
    else if (a == "--staging")
      staging = true;
    else if (i + 1 < argc)
      flags[a] = argv[++i];
  }
  if (!flags.count("--to")) {
    std::cerr << "usage: scatter_gather_bench --to HOST:PORT [--regions N] [--region-size B] "
                 "[--count N] [--depth D] [--chunk-size B] [--json]\n";
    return 2;
  }
  const size_t regions = std::stoull(flags["--regions"]);
  const size_t size = std::stoull(flags["--region-size"]);
  const int count = std::stoi(flags["--count"]);
  std::vector<uint8_t> buffer(2 * regions * size);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  std::vector<writ::Region> table;
  std::vector<uint8_t> concat;
  for (size_t k = 0; k < regions; ++k) {
    table.push_back({buffer.data() + 2 * k * size, size});
    if (contiguous)
      concat.insert(concat.end(), buffer.data() + 2 * k * size, buffer.data() + (2 * k + 1) * size);
  }

  writ::SessionOptions session;
  session.to = flags["--to"];
  session.depth = static_cast<uint32_t>(std::stoul(flags["--depth"]));
  auto sender = writ::Sender::Connect(session);
  if (!sender.ok()) {
    std::cerr << "connect: " << sender.status().ToString() << "\n";
    return 1;
  }
  const std::string run = std::to_string(Clock::now().time_since_epoch().count());
  std::vector<double> micros;
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    writ::DeliveryOptions options;
    options.id = "sg-" + run + "-" + std::to_string(i);
    options.chunk_size = std::stoull(flags["--chunk-size"]);
    if (staging) options.source = writ::SourcePath::kStaging;
    const auto t0 = Clock::now();
    const writ::DeliveryOutcome out =
        contiguous ? (*sender)->SendBytes(concat, options) : (*sender)->SendRegions(table, options);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!out.status.ok()) {
      std::cerr << "delivery " << i << ": " << out.status.ToString() << "\n";
      return 1;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double bytes = static_cast<double>(regions * size);
  const double p50 = Percentile(micros, 0.5);
  nlohmann::json doc{{"shape", contiguous ? "contiguous" : "scatter-gather"},
                     {"staging", staging},
                     {"regions", regions},
                     {"region_size", size},
                     {"bytes", regions * size},
                     {"count", count},
                     {"depth", session.depth},
                     {"p50_us", p50},
                     {"p99_us", Percentile(micros, 0.99)},
                     {"p999_us", Percentile(micros, 0.999)},
                     {"gb_per_s_at_p50", bytes / p50 / 1e3},
                     {"gb_per_s_overall", bytes * count / seconds / 1e9},
                     {"sender_cpu_s", CpuSeconds() - cpu0},
                     {"wall_s", seconds}};
  if (as_json) {
    std::cout << doc.dump() << std::endl;
    return 0;
  }
  std::printf(
      "%zu x %zu B regions, depth %u: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, "
      "%.3f GB/s at p50, %.3f GB/s overall (sender CPU %.2f s of %.2f s)\n",
      regions, size, session.depth, p50, doc["p99_us"].get<double>(), doc["p999_us"].get<double>(),
      doc["gb_per_s_at_p50"].get<double>(), doc["gb_per_s_overall"].get<double>(),
      doc["sender_cpu_s"].get<double>(), seconds);
  return 0;
}
