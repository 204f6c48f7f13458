// raw_write_bench: the raw transport baseline. Writes at least --bytes in
// --size writes (depth --depth in flight) from an initiator node into a
// target's registered window, per provider and completion level, and measures
// memcpy bandwidth in the same run as the ceiling. Target and initiator are two
// nodes in one process (the target's progress loop on its own thread).
//
//   raw_write_bench [--providers tcp,tcp;ofi_rxm,shm] [--levels default,delivery]
//                   [--bytes 1GiB] [--size 8MiB] [--depth 4] [--fresh | --spread] [--json]
// --fresh: the target window spans all of --bytes in never-touched memory (one offset per
// write), the baseline for a receiver that keeps the bytes in memory.
// --spread: the same span and offsets in memory written once before (an application's
// buffer, allocated and touched: the baseline for deliveries into an exposed target).
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "fabric/progress_loop.h"

using namespace writ;
using namespace writ::fabric;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

uint64_t ParseSize(const std::string& s) {
  size_t pos = 0;
  uint64_t v = std::stoull(s, &pos);
  const std::string unit = s.substr(pos);
  if (unit == "KiB") v <<= 10;
  if (unit == "MiB") v <<= 20;
  if (unit == "GiB") v <<= 30;
  return v;
}

// Memory from a fresh anonymous mapping: warm (written once, as a reused window is) or
// fresh (never touched: the first write of every page pays for the page).
struct Buffer {
  explicit Buffer(size_t n, bool warm = true)
      : data(static_cast<uint8_t*>(
            mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))),
        size(n) {
    if (data == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    if (warm) std::memset(data, 0x5a, n);
  }
  ~Buffer() { munmap(data, size); }
  uint8_t* data;
  size_t size;
};

// Writing --bytes into memory nobody touched yet (a new memfd, pwrite from a warm buffer):
// what any receiver that keeps a delivery's bytes in memory pays at least once per byte.
double FreshMemoryGBps(size_t size, uint64_t total) {
  Buffer src(size);
  const int fd = memfd_create("raw-write-bench", MFD_CLOEXEC);
  if (fd < 0) return 0;
  const auto start = Clock::now();
  for (uint64_t done = 0; done < total; done += size) {
    if (pwrite(fd, src.data, size, static_cast<off_t>(done)) != static_cast<ssize_t>(size)) break;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  close(fd);
  return static_cast<double>(total) / secs / 1e9;
}

double MemcpyGBps(size_t size, uint64_t total) {
  Buffer a(size), b(size);
  const auto start = Clock::now();
  for (uint64_t done = 0; done < total; done += size) {
    std::memcpy(b.data, a.data, size);
    asm volatile("" ::"r"(b.data) : "memory");
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(total) / secs / 1e9;
}

// What the receiver pays to clear a window before it is granted again (the default 32 MiB
// window, resident: the pool's memory is reused, never faulted in again).
double WindowClearGBps(uint64_t total) {
  constexpr size_t kWindow = 32u << 20;
  Buffer window(kWindow);
  std::memset(window.data, 1, kWindow);
  const auto start = Clock::now();
  for (uint64_t done = 0; done < total; done += kWindow) {
    std::memset(window.data, 0, kWindow);
    asm volatile("" ::"r"(window.data) : "memory");
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(total) / secs / 1e9;
}

// A target node with its progress loop and a connected initiator, in one process.
struct Link {
  std::unique_ptr<FabricNode> target;
  std::unique_ptr<Buffer> window;
  MemoryRegion region;
  std::unique_ptr<ProgressLoop> loop;
  std::unique_ptr<FabricNode> init;
  std::unique_ptr<Buffer> source;
  MemoryRegion local;
  Peer peer;

  Status Close() {
    loop->Stop();
    WRIT_RETURN_IF_ERROR(local.Close());
    WRIT_RETURN_IF_ERROR(init->Close());
    WRIT_RETURN_IF_ERROR(region.Close());
    return target->Close();
  }
};

// `window_len` of target memory (fresh: never touched before the writes land), and a
// source of `source_len`.
Result<std::unique_ptr<Link>> OpenLink(const std::string& provider, size_t window_len,
                                       size_t source_len, size_t depth, bool fresh_window = false) {
  auto link = std::make_unique<Link>();
  NodeOptions target_options;
  target_options.provider.provider = provider;
  target_options.provider.role = Role::kTarget;
  if (provider != "shm") {
    target_options.provider.node = "127.0.0.1";
    target_options.provider.service = "0";
  }
  WRIT_ASSIGN_OR_RETURN(link->target, FabricNode::Open(target_options));
  link->window = std::make_unique<Buffer>(window_len, !fresh_window);
  WRIT_ASSIGN_OR_RETURN(
      link->region, link->target->Register(link->window->data, window_len, Access::kRemoteWrite));
  link->loop = std::make_unique<ProgressLoop>(*link->target, [](const WorkCompletion&) {});

  NodeOptions init_options;
  init_options.provider.provider = provider;
  init_options.provider.role = Role::kInitiator;
  init_options.max_outstanding = depth;
  WRIT_ASSIGN_OR_RETURN(std::vector<uint8_t> address, link->target->LocalAddress());
  if (link->target->kind() == EndpointKind::kMsg) {
    WRIT_ASSIGN_OR_RETURN(std::string text, link->target->LocalAddressText());
    init_options.provider.node = text.substr(0, text.rfind(':'));
    init_options.provider.service = text.substr(text.rfind(':') + 1);
    WRIT_ASSIGN_OR_RETURN(link->init, FabricNode::Open(init_options));
    WRIT_ASSIGN_OR_RETURN(link->peer, link->init->Connect(std::chrono::seconds(10)));
  } else {
    if (provider != "shm") init_options.provider.node = "127.0.0.1";
    WRIT_ASSIGN_OR_RETURN(link->init, FabricNode::Open(init_options));
    WRIT_ASSIGN_OR_RETURN(link->peer, link->init->AddPeer(address));
  }
  link->source = std::make_unique<Buffer>(source_len);
  WRIT_ASSIGN_OR_RETURN(link->local,
                        link->init->Register(link->source->data, source_len, Access::kLocalSource));
  return link;
}

WriteRequest MakeWrite(Link& link, uint64_t id, uint64_t slot, size_t size, CompletionLevel level,
                       uint64_t remote_offset) {
  WriteRequest req;
  req.request_id = id;
  req.peer = link.peer;
  req.local = &link.local;
  req.local_offset = slot * size;
  req.length = size;
  req.remote = link.region.descriptor();
  req.remote_offset = remote_offset;
  req.level = level;
  return req;
}

// `spread`: the target's window spans all of `total` (`fresh`: never touched) and every write
// lands at its own offset, as a delivery kept in memory does; otherwise `depth` writes
// cycle through one warm window.
struct RawRun {
  double gbps = 0;
  double cpu_seconds_per_gib = 0;  // user + sys of the whole process: both sides together
};

double ProcessCpuSeconds() {
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(use.ru_utime) + secs(use.ru_stime);
}

Result<RawRun> RawWrite(const std::string& provider, CompletionLevel level, size_t size,
                        uint64_t total, size_t depth, bool fresh, bool spread) {
  const uint64_t writes = (total + size - 1) / size;
  WRIT_ASSIGN_OR_RETURN(auto link, OpenLink(provider, spread ? writes * size : size * depth,
                                            size * depth, depth, fresh));
  std::vector<WorkCompletion> records;
  records.reserve(64);
  uint64_t posted = 0, completed = 0;
  const auto start = Clock::now();
  const double cpu_start = ProcessCpuSeconds();
  while (completed < writes) {
    while (posted < writes && posted - completed < depth) {
      WRIT_ASSIGN_OR_RETURN(PostedWrite p, link->init->PostWrite(MakeWrite(
                                               *link, posted + 1, posted % depth, size, level,
                                               (spread ? posted : posted % depth) * size)));
      (void)p;
      ++posted;
    }
    records.clear();
    WRIT_ASSIGN_OR_RETURN(size_t n, link->init->Poll(records, 64));
    for (size_t i = 0; i < n; ++i) {
      if (!records[i].ok()) return Status::Transport("write failed: " + records[i].Describe());
      ++completed;
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = ProcessCpuSeconds() - cpu_start;
  WRIT_RETURN_IF_ERROR(link->Close());
  const double bytes = static_cast<double>(writes * size);
  return RawRun{bytes / secs / 1e9, cpu / (bytes / (1ull << 30))};
}

struct RoundTrips {
  double p50 = 0, p99 = 0, p999 = 0;  // microseconds
};

// Time from posting one write-with-data (delivery-complete, depth 1) to its completion
// record (polled in a loop): the raw round trip a small delivery cannot beat.
Result<RoundTrips> RawRoundTripMicros(const std::string& provider, size_t size, int count) {
  WRIT_ASSIGN_OR_RETURN(auto link, OpenLink(provider, size, size, 1));
  std::vector<double> micros;
  std::vector<WorkCompletion> records;
  for (int i = 0; i < count; ++i) {
    WriteRequest req =
        MakeWrite(*link, static_cast<uint64_t>(i) + 1, 0, size, CompletionLevel::kDelivery, 0);
    req.remote_data = static_cast<uint32_t>(i);
    const auto start = Clock::now();
    WRIT_ASSIGN_OR_RETURN(PostedWrite p, link->init->PostWrite(req));
    (void)p;
    records.clear();
    while (records.empty()) WRIT_RETURN_IF_ERROR(link->init->Poll(records, 1).status());
    if (!records[0].ok()) return Status::Transport("write failed: " + records[0].Describe());
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  WRIT_RETURN_IF_ERROR(link->Close());
  std::sort(micros.begin(), micros.end());
  const auto at = [&micros](double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(micros.size())));
    return micros[std::min(micros.size() - 1, rank - 1)];
  };
  return RoundTrips{at(0.5), at(0.99), at(0.999)};
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"--providers", "tcp,tcp;ofi_rxm,shm"},
                                              {"--levels", "default,transmit,delivery"},
                                              {"--bytes", "1GiB"},
                                              {"--size", "8MiB"},
                                              {"--depth", "4"}};
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      as_json = true;
    else if (a == "--fresh" || a == "--spread")
      flags[a] = "1";
    else if (i + 1 < argc)
      flags[a] = argv[++i];
  }
  if (flags.count("--round-trips")) {
    // raw_write_bench --round-trips N [--size 4KiB] [--providers ...]
    const int count = std::stoi(flags["--round-trips"]);
    const size_t size =
        flags.count("--size") && flags["--size"] != "8MiB" ? ParseSize(flags["--size"]) : 4096;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& provider : Split(flags["--providers"])) {
      auto micros = RawRoundTripMicros(provider, size, count);
      if (!micros.ok()) {
        std::cerr << provider << ": " << micros.status().ToString() << "\n";
        return 1;
      }
      out.push_back({{"path", provider},
                     {"size", size},
                     {"median_us", micros->p50},
                     {"p99_us", micros->p99},
                     {"p999_us", micros->p999}});
      if (!as_json)
        std::printf(
            "%-14s %zu-byte write-with-data round trip, median %.1f us, p99 %.1f us, "
            "p99.9 %.1f us\n",
            provider.c_str(), size, micros->p50, micros->p99, micros->p999);
    }
    if (as_json) std::cout << out.dump(2) << std::endl;
    return 0;
  }
  const uint64_t total = ParseSize(flags["--bytes"]);
  const size_t size = ParseSize(flags["--size"]);
  const size_t depth = std::stoul(flags["--depth"]);

  nlohmann::json results = nlohmann::json::array();
  const bool fresh = flags.count("--fresh") > 0;
  const bool spread = fresh || flags.count("--spread") > 0;
  const double memcpy_gbps = MemcpyGBps(size, total);
  results.push_back({{"path", "memcpy"}, {"gbps", memcpy_gbps}});
  const double fresh_gbps = FreshMemoryGBps(size, total);
  results.push_back({{"path", "fresh-memory"}, {"gbps", fresh_gbps}});
  const double clear_gbps = WindowClearGBps(total);
  results.push_back({{"path", "window-clear"}, {"gbps", clear_gbps}});
  if (!as_json) {
    std::printf("raw transport baseline: %s in %s writes, depth %zu, %s\n",
                flags["--bytes"].c_str(), flags["--size"].c_str(), depth,
                LibfabricVersion().c_str());
    std::printf("%-14s %-10s %8s %10s\n", "path", "level", "GB/s", "vs memcpy");
    std::printf("%-14s %-10s %8.2f %10s\n", "memcpy", "-", memcpy_gbps, "1.00");
    std::printf("%-14s %-10s %8.2f %10.2f   (pwrite into a new memfd)\n", "fresh memory", "-",
                fresh_gbps, fresh_gbps / memcpy_gbps);
    std::printf("%-14s %-10s %8.2f %10.2f   (memset of a 32 MiB window)\n", "window clear", "-",
                clear_gbps, clear_gbps / memcpy_gbps);
    if (spread)
      std::printf("target window: all of --bytes, %s memory, one offset per write\n",
                  fresh ? "fresh" : "warm");
  }
  int failures = 0;
  for (const auto& provider : Split(flags["--providers"])) {
    for (const auto& level_name : Split(flags["--levels"])) {
      auto level = ParseCompletionLevel(level_name);
      if (!level.ok()) {
        std::cerr << "unknown level " << level_name << "\n";
        return 2;
      }
      auto run = RawWrite(provider, *level, size, total, depth, fresh, spread);
      auto gbps = run.ok() ? Result<double>(run->gbps) : Result<double>(run.status());
      if (!gbps.ok()) {
        ++failures;
        std::cerr << provider << " " << level_name << ": " << gbps.status().ToString() << "\n";
        results.push_back(
            {{"path", provider}, {"level", level_name}, {"error", gbps.status().ToString()}});
        continue;
      }
      results.push_back({{"path", provider},
                         {"level", level_name},
                         {"fresh", fresh},
                         {"spread", spread},
                         {"gbps", *gbps},
                         {"cpu_s_per_gib", run->cpu_seconds_per_gib}});
      if (!as_json) {
        std::printf("%-14s %-10s %8.2f %10.2f\n", provider.c_str(), level_name.c_str(), *gbps,
                    *gbps / memcpy_gbps);
      }
    }
  }
  if (as_json) std::cout << results.dump(2) << std::endl;
  return failures ? 1 : 0;
}
