// Digest rule throughput on one core: bytes/s per rule over an 8 MiB buffer
// (one chunk of the RC-233 example), hashed as one Update, against memcpy of
// the same buffer for scale. Results: docs/benchmarks.md "Digest rules".
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "vocabulary/digest.h"
#include "writ/vocabulary.h"

namespace writ::vocabulary {
namespace {

constexpr size_t kBufferBytes = 8 << 20;

const std::vector<uint8_t>& Buffer() {
  static const std::vector<uint8_t> buffer = [] {
    std::vector<uint8_t> b(kBufferBytes);
    std::mt19937_64 rng(233);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
  }();
  return buffer;
}

void BM_Digest(benchmark::State& state, Rule rule) {
  const auto& buffer = Buffer();
  auto digester = Digester::Create(rule);
  if (!digester.ok()) {
    state.SkipWithError(digester.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    (*digester)->Reset();
    (*digester)->Update(buffer);
    std::vector<uint8_t> digest = (*digester)->Finish();
    benchmark::DoNotOptimize(digest.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBufferBytes);
  state.SetLabel(std::string(RuleName(rule)));
}

void BM_Memcpy(benchmark::State& state) {
  const auto& buffer = Buffer();
  std::vector<uint8_t> copy(kBufferBytes);
  for (auto _ : state) {
    std::memcpy(copy.data(), buffer.data(), kBufferBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBufferBytes);
  state.SetLabel("memcpy, for scale");
}

BENCHMARK_CAPTURE(BM_Digest, xxh3_128, Rule::kXxh3_128)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Digest, crc32c, Rule::kCrc32c)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Digest, sha256, Rule::kSha256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace writ::vocabulary

BENCHMARK_MAIN();
