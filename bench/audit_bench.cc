// How long `writ audit` takes on a large bundle: 1,000 deliveries of 100
// portions = 100,000 work completions (about 15 MB of JSON), built in memory.
// Run: build/release/bench/audit_bench
#include <benchmark/benchmark.h>

#include "synthetic_bundle.h"
#include "writ/audit.h"

namespace {

using writ::audit::testing::SyntheticBundle;

const std::string& Bundle100k() {
  static const std::string text = SyntheticBundle(1000, 100);
  return text;
}

void SetCounters(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["completions/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 100000, benchmark::Counter::kIsRate);
}

// What `writ audit BUNDLE --json` does after reading the file.
void BM_ParseAuditJson100k(benchmark::State& state) {
  const std::string& text = Bundle100k();
  for (auto _ : state) {
    auto bundle = writ::audit::ParseBundle(text);
    if (!bundle.ok()) state.SkipWithError(bundle.status().message().c_str());
    std::string json = writ::audit::ReportToJson(writ::audit::Audit(*bundle));
    benchmark::DoNotOptimize(json);
  }
  SetCounters(state, text.size());
}
BENCHMARK(BM_ParseAuditJson100k)->Unit(benchmark::kMillisecond);

void BM_Parse100k(benchmark::State& state) {
  const std::string& text = Bundle100k();
  for (auto _ : state) {
    auto bundle = writ::audit::ParseBundle(text);
    benchmark::DoNotOptimize(bundle);
  }
  SetCounters(state, text.size());
}
BENCHMARK(BM_Parse100k)->Unit(benchmark::kMillisecond);

// The rules alone, on an already parsed bundle.
void BM_Audit100k(benchmark::State& state) {
  auto bundle = writ::audit::ParseBundle(Bundle100k());
  if (!bundle.ok()) {
    state.SkipWithError(bundle.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto report = writ::audit::Audit(*bundle);
    benchmark::DoNotOptimize(report);
  }
  SetCounters(state, 0);
}
BENCHMARK(BM_Audit100k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
