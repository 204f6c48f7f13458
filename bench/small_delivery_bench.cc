// small_delivery_bench: N small deliveries, one after another, each until `validated`,
// through the public API against a running `writ serve`. Reports the median latency of
// one whole writ::Send (connection and fabric setup included: writ has no persistent
// sender session yet) and deliveries per second.
//   small_delivery_bench --to HOST:PORT --file PATH [--count 200] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "writ/sender.h"

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"--count", "200"}};
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") as_json = true;
    else if (i + 1 < argc) flags[a] = argv[++i];
  }
  if (!flags.count("--to") || !flags.count("--file")) {
    std::cerr << "usage: small_delivery_bench --to HOST:PORT --file PATH [--count N] [--json]\n";
    return 2;
  }
  const int count = std::stoi(flags["--count"]);
  std::vector<double> micros;
  const auto run_id = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    writ::SendOptions options;
    options.to = flags["--to"];
    options.id = "small-" + run_id + "-" + std::to_string(i);
    options.until = writ::Rung::kValidated;
    const auto t0 = std::chrono::steady_clock::now();
    writ::DeliveryOutcome outcome = writ::Send(flags["--file"], options);
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!outcome.status.ok()) {
      std::cerr << "delivery " << i << ": " << outcome.status.ToString() << "\n";
      return 1;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(micros.begin(), micros.end());
  const double median = micros[micros.size() / 2];
  if (as_json) {
    std::cout << nlohmann::json{{"count", count}, {"median_us", median}, {"per_second", count / secs}}.dump()
              << std::endl;
  } else {
    std::printf("%d deliveries to validated: median %.1f us, %.0f deliveries/s\n", count, median,
                count / secs);
  }
  return 0;
}
