// exposed_target_bench: KV-style blocks written into an embedded receiver's exposed paged
// buffer (Receiver::Expose with PageGeometry; issue #32's bench), through the public API,
// both sides in one process over a real provider (tcp or shm loopback). Measures the time
// from the first submission to the last validated receipt, and beside it the counts that do
// not vary with the machine: bytes the receiver copied into the buffer (zero when every
// window lay in place) and consumed in place, windows registered (one memory registration
// each) per delivery, heap allocations and minor page faults per delivery (whole process:
// sender and receiver together). bench/exposed_target runs it beside raw fi_write.
//
//   exposed_target_bench [--provider tcp] [--blocks 1000] [--block-size 256KiB]
//                        [--page-size 256KiB] [--in-flight 64] [--buffer-blocks N] [--json]
// Pages of a block are scattered over the buffer (shuffled, as a KV allocator hands them
// out). The buffer holds --buffer-blocks blocks (default: all of --blocks, each block's
// pages its own); fewer reuse them, block b in the pages of block b mod N, which needs N
// well above --in-flight (two deliveries into the same pages at once are refused).
#include <sys/resource.h>
#include <writ/receiver.h>
#include <writ/sender.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "counting_new.h"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchFlags {
  std::string provider = "tcp";
  uint64_t blocks = 1000;
  uint64_t block_size = 256 << 10;
  uint64_t page_size = 256 << 10;
  uint32_t in_flight = 64;
  uint64_t buffer_blocks = 0;  // 0: --blocks
  bool json = false;
};

uint64_t ParseBytes(const std::string& s) {
  size_t pos = 0;
  uint64_t v = std::stoull(s, &pos);
  const std::string unit = s.substr(pos);
  if (unit == "KiB") v <<= 10;
  if (unit == "MiB") v <<= 20;
  if (unit == "GiB") v <<= 30;
  return v;
}

bool ParseFlags(int argc, char** argv, BenchFlags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      f.json = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (a == "--provider") {
      f.provider = v;
    } else if (a == "--blocks") {
      f.blocks = std::stoull(v);
    } else if (a == "--block-size") {
      f.block_size = ParseBytes(v);
    } else if (a == "--page-size") {
      f.page_size = ParseBytes(v);
    } else if (a == "--in-flight") {
      f.in_flight = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--buffer-blocks") {
      f.buffer_blocks = std::stoull(v);
    } else {
      return false;
    }
  }
  if (f.buffer_blocks == 0 || f.buffer_blocks > f.blocks) f.buffer_blocks = f.blocks;
  return f.blocks > 0 && f.page_size > 0 && f.block_size % f.page_size == 0 && f.in_flight > 0;
}

// The receiver's counters this bench reads, from its Prometheus text.
struct ReceiverCounts {
  uint64_t windows_registered = 0;
  uint64_t copied_bytes = 0;
  uint64_t in_place_bytes = 0;

  static ReceiverCounts Of(const writ::Receiver& receiver) {
    ReceiverCounts c;
    std::istringstream in(receiver.MetricsText());
    const std::map<std::string, uint64_t*> wanted = {
        {"writ_windows_registered_total", &c.windows_registered},
        {"writ_exposed_bytes_total{how=\"copied\"}", &c.copied_bytes},
        {"writ_exposed_bytes_total{how=\"in_place\"}", &c.in_place_bytes}};
    for (std::string line; std::getline(in, line);) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos) continue;
      auto it = wanted.find(line.substr(0, space));
      if (it != wanted.end()) *it->second = std::stoull(line.substr(space + 1));
    }
    return c;
  }
};

struct ProcessCounts {
  uint64_t allocations = 0;
  uint64_t minor_faults = 0;
  double cpu_s = 0;

  static ProcessCounts Now() {
    ProcessCounts p;
    p.allocations = writ_bench::CountedAllocations();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    p.minor_faults = static_cast<uint64_t>(ru.ru_minflt);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    p.cpu_s = secs(ru.ru_utime) + secs(ru.ru_stime);
    return p;
  }
};

// The application's side: how many deliveries writ told it about, and how many were ok.
struct Told {
  std::mutex mu;
  std::condition_variable changed;
  uint64_t told = 0;
  uint64_t failed = 0;

  void On(const writ::TargetDelivery& d) {
    std::lock_guard<std::mutex> lock(mu);
    ++told;
    if (!d.ok) ++failed;
    changed.notify_all();
  }
  bool Await(uint64_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(120), [&] { return told >= n; });
  }
};

// Each block's pages: `pages_per_block` distinct pages, scattered over the buffer.
std::vector<std::vector<uint64_t>> BlockTable(uint64_t blocks, uint64_t pages_per_block) {
  std::vector<uint64_t> pages(blocks * pages_per_block);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937_64(7));
  std::vector<std::vector<uint64_t>> table(blocks);
  for (uint64_t b = 0; b < blocks; ++b) {
    table[b].assign(pages.begin() + static_cast<long>(b * pages_per_block),
                    pages.begin() + static_cast<long>((b + 1) * pages_per_block));
  }
  return table;
}

struct RunResult {
  uint64_t ok = 0;
  double wall_s = 0;
};

// Submits every block (the session keeps `in_flight` of them in flight) and waits for each
// validated receipt. `first`: the id of the first block, so runs never reuse an id.
RunResult Deliver(writ::Sender& sender, const std::vector<std::vector<uint8_t>>& sources,
                  const std::vector<std::vector<uint64_t>>& table, uint64_t count, uint64_t first) {
  const auto start = Clock::now();
  std::vector<writ::DeliveryHandle> handles;
  handles.reserve(count);
  for (uint64_t b = 0; b < count; ++b) {
    writ::DeliveryOptions options;
    options.id = "block-" + std::to_string(first + b);
    options.target = "kv";
    options.target_pages = table[b % table.size()];
    handles.push_back(sender.SubmitBytes(sources[b % sources.size()], options));
  }
  RunResult r;
  for (auto& h : handles) {
    const writ::DeliveryOutcome& out = h.Wait();
    if (out.status.ok()) {
      ++r.ok;
    } else if (r.ok == 0) {
      std::fprintf(stderr, "exposed_target_bench: %s\n", out.status.ToString().c_str());
    }
  }
  r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

writ::ReceiverOptions ReceiverFor(const BenchFlags& f) {
  writ::ReceiverOptions o;
  o.provider = f.provider;
  const uint32_t windows = f.in_flight * static_cast<uint32_t>(f.block_size / f.page_size);
  o.window_bytes = f.page_size;
  o.window_pool_bytes = static_cast<uint64_t>(windows) * f.page_size;
  o.max_deliveries_per_sender = f.in_flight;
  o.max_deliveries_per_connection = f.in_flight;
  o.max_windows_per_sender = windows;
  return o;
}

nlohmann::json Report(const BenchFlags& f, const RunResult& run, const ReceiverCounts& r0,
                      const ReceiverCounts& r1, const ProcessCounts& p0, const ProcessCounts& p1,
                      uint64_t told_failed) {
  const double n = static_cast<double>(f.blocks);
  return {
      {"provider", f.provider},
      {"blocks", f.blocks},
      {"block_size", f.block_size},
      {"page_size", f.page_size},
      {"in_flight", f.in_flight},
      {"validated", run.ok},
      {"failed_in_target", told_failed},
      {"wall_s", run.wall_s},
      {"gbps", static_cast<double>(f.blocks * f.block_size) / run.wall_s / 1e9},
      {"cpu_s", p1.cpu_s - p0.cpu_s},
      {"receiver_copied_bytes", r1.copied_bytes - r0.copied_bytes},
      {"receiver_in_place_bytes", r1.in_place_bytes - r0.in_place_bytes},
      {"registrations_per_delivery",
       static_cast<double>(r1.windows_registered - r0.windows_registered) / n},
      {"allocations_per_delivery", static_cast<double>(p1.allocations - p0.allocations) / n},
      {"minor_faults_per_delivery", static_cast<double>(p1.minor_faults - p0.minor_faults) / n}};
}

int Bench(const BenchFlags& f) {
  const uint64_t pages_per_block = f.block_size / f.page_size;
  std::vector<uint8_t> cache(f.buffer_blocks * f.block_size, 0x5a);  // the KV cache
  Told told;                                                         // outlives the receiver
  auto receiver = writ::Receiver::Start(ReceiverFor(f));
  if (!receiver.ok()) {
    std::fprintf(stderr, "receiver: %s\n", receiver.status().ToString().c_str());
    return 1;
  }
  writ::ExposeOptions expose;
  expose.pages = writ::PageGeometry{f.page_size, f.buffer_blocks * pages_per_block};
  expose.on_delivery = [&told](const writ::TargetDelivery& d) { told.On(d); };
  if (writ::Status s = (*receiver)->Expose("kv", cache, expose); !s.ok()) {
    std::fprintf(stderr, "expose: %s\n", s.ToString().c_str());
    return 1;
  }
  writ::SessionOptions session;
  session.to = (*receiver)->listen_address();
  session.max_in_flight = f.in_flight;
  session.depth = f.in_flight;
  auto sender = writ::Sender::Connect(session);
  if (!sender.ok()) {
    std::fprintf(stderr, "sender: %s\n", sender.status().ToString().c_str());
    return 1;
  }
  // Distinct block contents, one per delivery in flight: each a caller's registered source.
  std::vector<std::vector<uint8_t>> sources(f.in_flight, std::vector<uint8_t>(f.block_size));
  std::mt19937_64 gen(1);
  for (auto& s : sources) std::generate(s.begin(), s.end(), [&gen] { return uint8_t(gen()); });
  const auto table = BlockTable(f.buffer_blocks, pages_per_block);
  const uint64_t warm = std::min<uint64_t>(f.in_flight, f.blocks);
  const RunResult warmed = Deliver(**sender, sources, table, warm, 0);
  if (!told.Await(warm)) std::fprintf(stderr, "exposed_target_bench: warm-up not told\n");
  const ReceiverCounts r0 = ReceiverCounts::Of(**receiver);
  const ProcessCounts p0 = ProcessCounts::Now();
  const RunResult run = Deliver(**sender, sources, table, f.blocks, warm);
  const bool all_told = told.Await(warm + f.blocks);
  const ProcessCounts p1 = ProcessCounts::Now();
  const ReceiverCounts r1 = ReceiverCounts::Of(**receiver);
  const nlohmann::json out = Report(f, run, r0, r1, p0, p1, told.failed);
  const bool ok = warmed.ok == warm && run.ok == f.blocks && all_told && told.failed == 0 &&
                  (*receiver)->Revoke("kv").ok() && (*receiver)->Stop().ok();
  if (f.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s\n", out.dump().c_str());
  }
  if (!ok) std::fprintf(stderr, "exposed_target_bench: FAILED\n");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  BenchFlags flags;
  if (!ParseFlags(argc, argv, flags)) {
    std::fprintf(stderr,
                 "usage: exposed_target_bench [--provider tcp] [--blocks 1000] "
                 "[--block-size 256KiB] [--page-size 256KiB] [--in-flight 64] [--buffer-blocks N] "
                 "[--json]\n");
    return 2;
  }
  return Bench(flags);
}
