// inprocess_cost_bench: writ's own CPU per small delivery, both sides together, in one
// process over the in-memory fabric (src/fabric/memory_fabric.h): no provider, no fabric
// sockets, so what is measured is writ's code (the control channel is still loopback TCP).
// Each delivery goes to `validated` + `retained` (volatile); the sender has no identity
// (announces and commits unsigned), so every Ed25519 signature counted is the receiver's,
// over its receipts (one per group of receipts ready together). With --signed-sender the
// sender has one: it signs each delivery's announce (a ring delivery's carries its digest;
// a windowed one's commit is signed too) and transport receipt (counted apart), and the
// receiver verifies the announce (and a windowed delivery's commit).
//
// Two modes, each on a receiver and a sender session of its own (after a warm-up on another
// pair, so the counts are the measured deliveries' alone):
//   one-at-a-time: submit, wait for the outcome, next;
//   in-flight:     all submitted at once, the session keeps --in-flight (64) in flight.
// Per delivery: process CPU (user + system, every thread: CLOCK_PROCESS_CPUTIME_ID),
// Ed25519 signatures and verifications and their cost (each measured here on this thread),
// CPU excluding them, heap allocations (operator new, every thread), minor page faults,
// context switches; and wall time and deliveries per second.
// With --consume each delivery is removed from the receiver as soon as its outcome is in, as
// a consumer of KV blocks does once it has used one: its memory is reused by later ones
// (without it every delivery lands in memory the process never touched before).
//   inprocess_cost_bench [--count 2000] [--size 4096] [--in-flight 64]
//                        [--mode both|one-at-a-time|in-flight] [--signed-sender] [--consume]
//                        [--json]
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/pattern.h"
#include "counting_new.h"
#include "fabric/memory_fabric.h"
#include "receipt/identity.h"
#include "receiver/receiver_start.h"
#include "sender/delivery_run.h"
#include "sender/delivery_source.h"
#include "sender/link.h"
#include "sender/session.h"
#include "writ/receiver.h"

namespace {

using namespace writ;
using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t count = 2000;
  uint64_t size = 4096;
  uint32_t in_flight = 64;
  std::string mode = "both";
  bool signed_sender = false;
  bool consume = false;  // each delivery removed from the receiver once its outcome is in
  bool json = false;
};

struct Usage {
  double cpu_s = 0;
  uint64_t allocations = 0;
  uint64_t minor_faults = 0;
  uint64_t context_switches = 0;
  Clock::time_point wall;

  static Usage Now() {
    Usage u;
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    u.cpu_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    u.allocations = writ_bench::CountedAllocations();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    u.minor_faults = static_cast<uint64_t>(ru.ru_minflt);
    u.context_switches = static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
    u.wall = Clock::now();
    return u;
  }
};

struct ModeResult {
  std::string mode;
  uint64_t deliveries = 0;
  uint64_t failed = 0;
  double wall_s = 0;
  double cpu_s = 0;
  uint64_t allocations = 0;
  uint64_t minor_faults = 0;
  uint64_t context_switches = 0;
  uint64_t receipts_signed = 0;
  uint64_t signatures = 0;
  uint64_t sender_signatures = 0;
  uint64_t verifications = 0;  // Ed25519 verifications by either side (the receiver's, here)
  uint64_t ring_deliveries = 0;
};

// One receiver and one sender session over a fresh MemoryFabric.
class Pair {
 public:
  // `identity` (may be null): the sender's.
  Status Open(uint32_t in_flight, const receipt::Identity* identity) {
    char dir[] = "/tmp/writ-inprocess-cost-XXXXXX";
    if (mkdtemp(dir) == nullptr) return Status::Io("mkdtemp", errno);
    dir_ = dir;
    ReceiverOptions options;
    options.provider = fabric::kMemoryProvider;
    options.identity_dir = dir_ + "/identity";
    options.volatile_capacity_bytes = 1ull << 30;
    options.max_deliveries_per_sender = in_flight;
    options.max_deliveries_per_connection = in_flight;
    options.window_pool_bytes = 64ull << 20;
    options.window_bytes = 1ull << 20;
    WRIT_ASSIGN_OR_RETURN(receiver_, receiver::StartReceiver(std::move(options), fabric_.Opener()));
    SessionOptions session;
    session.to = receiver_->listen_address();
    session.depth = in_flight;
    session.max_in_flight = in_flight;
    WRIT_ASSIGN_OR_RETURN(auto link, sender::Link::Open(session, fabric_.Opener()));
    session_ = std::make_unique<sender::Session>(std::move(link), identity, nullptr, in_flight);
    return session_->Start();
  }

  DeliveryHandle Submit(std::span<const uint8_t> bytes, const std::string& id) {
    auto sub = std::make_unique<sender::Submission>();
    sub->options.id = id;
    sub->options.until = Rung::kValidated;
    sub->options.retention = RetentionClass::kVolatile;
    sub->out.status = sender::Prepare(sender::DeliverySource::FromBytes(bytes, id), sub->options,
                                      nullptr, sub->out, sub->prepared);
    DeliveryHandle handle(sub->state);
    if (!sub->out.status.ok()) {
      sub->state->Set(std::move(sub->out));
      return handle;
    }
    session_->Submit(std::move(sub));
    return handle;
  }

  // What a consumer of retained blocks does once it has used one (a KV cache).
  Status Remove(const std::string& id) { return receiver_->Remove(id, false).status(); }

  // Closes the session and shuts the receiver down: its summary counts the signatures.
  Result<ShutdownSummary> Close() {
    (void)session_->Close();
    auto summary = receiver_->Shutdown(std::chrono::milliseconds(1000));
    receiver_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    return summary;
  }

 private:
  std::string dir_;
  fabric::MemoryFabric fabric_;
  std::unique_ptr<Receiver> receiver_;
  std::unique_ptr<sender::Session> session_;
};

// Runs `count` deliveries of `bytes`, `window` submitted ahead of the one waited for.
Result<ModeResult> RunMode(const std::string& mode, const Options& opt,
                           std::span<const uint8_t> bytes, uint32_t in_flight) {
  ModeResult r;
  r.mode = mode;
  std::optional<receipt::Identity> identity;
  if (opt.signed_sender) {
    WRIT_ASSIGN_OR_RETURN(receipt::Identity made, receipt::Identity::Generate());
    identity.emplace(std::move(made));
  }
  const receipt::Identity* sender_identity = identity ? &*identity : nullptr;
  {  // warm-up on a pair of its own: allocator, page cache, code
    Pair warm;
    WRIT_RETURN_IF_ERROR(warm.Open(in_flight, sender_identity));
    std::vector<DeliveryHandle> handles;
    for (uint64_t i = 0; i < 200; ++i)
      handles.push_back(warm.Submit(bytes, "warm-" + mode + "-" + std::to_string(i)));
    for (auto& h : handles) (void)h.Wait();
    WRIT_RETURN_IF_ERROR(warm.Close().status());
  }
  Pair pair;
  WRIT_RETURN_IF_ERROR(pair.Open(in_flight, sender_identity));
  std::vector<std::string> ids;
  ids.reserve(opt.count);
  for (uint64_t i = 0; i < opt.count; ++i) ids.push_back(mode + "-" + std::to_string(i));
  std::vector<DeliveryHandle> handles(opt.count);
  // Each outcome is read and let go of as it completes, as a caller in a steady state does
  // (keeping 2,000 outcomes grows the heap a page at a time).
  auto take = [&](uint64_t i) {
    const DeliveryOutcome& out = handles[i].Wait();
    Status failed = out.status;
    if (failed.ok() && opt.consume) failed = pair.Remove(ids[i]);
    if (!failed.ok()) {
      if (r.failed == 0) std::cerr << "first failure: " << failed.ToString() << "\n";
      ++r.failed;
    }
    if (out.ring) ++r.ring_deliveries;
    handles[i] = DeliveryHandle();
  };
  const uint64_t signed_before = identity ? identity->signatures_made() : 0;
  const uint64_t verified_before = receipt::VerificationsMade();
  const Usage before = Usage::Now();
  if (in_flight == 1) {
    for (uint64_t i = 0; i < opt.count; ++i) {
      handles[i] = pair.Submit(bytes, ids[i]);
      take(i);
    }
  } else {
    for (uint64_t i = 0; i < opt.count; ++i) handles[i] = pair.Submit(bytes, ids[i]);
    for (uint64_t i = 0; i < opt.count; ++i) take(i);
  }
  const Usage after = Usage::Now();
  r.sender_signatures = identity ? identity->signatures_made() - signed_before : 0;
  r.verifications = receipt::VerificationsMade() - verified_before;
  WRIT_ASSIGN_OR_RETURN(ShutdownSummary summary, pair.Close());
  r.deliveries = opt.count;
  r.wall_s = std::chrono::duration<double>(after.wall - before.wall).count();
  r.cpu_s = after.cpu_s - before.cpu_s;
  r.allocations = after.allocations - before.allocations;
  r.minor_faults = after.minor_faults - before.minor_faults;
  r.context_switches = after.context_switches - before.context_switches;
  r.receipts_signed = summary.receipts_signed;
  r.signatures = summary.signatures;
  return r;
}

// CPU seconds of one Ed25519 signature (or, with `verify`, one verification) over a
// receipt-sized message, on this thread.
double SignatureCost(bool verify = false) {
  auto identity = receipt::Identity::Generate();
  if (!identity.ok()) return 0;
  std::vector<uint8_t> message(600, 0x5a);
  auto signature = identity->Sign(message);
  if (!signature.ok()) return 0;
  constexpr int kTimes = 2000;
  timespec a{}, b{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (int i = 0; i < kTimes; ++i) {
    if (verify) {
      (void)receipt::VerifySignature(identity->public_key(), message, *signature);
    } else {
      message[0] = static_cast<uint8_t>(i);
      (void)identity->Sign(message);
    }
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  const double s =
      static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e9;
  return s / kTimes;
}

nlohmann::json Json(const ModeResult& r, double sign_s, double verify_s) {
  const double n = static_cast<double>(r.deliveries);
  const double cpu_us = r.cpu_s * 1e6 / n;
  const double sigs = static_cast<double>(r.signatures) / n;
  const double sender_sigs = static_cast<double>(r.sender_signatures) / n;
  const double verifications = static_cast<double>(r.verifications) / n;
  return {{"mode", r.mode},
          {"deliveries", r.deliveries},
          {"failed", r.failed},
          {"ring_deliveries", r.ring_deliveries},
          {"wall_s", r.wall_s},
          {"per_second", n / r.wall_s},
          {"cpu_us_per_delivery", cpu_us},
          {"receipts_signed", r.receipts_signed},
          {"receipts_per_signature",
           r.signatures ? static_cast<double>(r.receipts_signed) / static_cast<double>(r.signatures)
                        : 0.0},
          {"signatures", r.signatures},
          {"signatures_per_delivery", sigs},
          {"deliveries_per_signature", r.signatures ? n / static_cast<double>(r.signatures) : 0.0},
          {"sender_signatures_per_delivery", sender_sigs},
          {"signature_us", sign_s * 1e6},
          {"verifications_per_delivery", verifications},
          {"verification_us", verify_s * 1e6},
          {"cpu_us_excluding_signatures",
           cpu_us - (sigs + sender_sigs) * sign_s * 1e6 - verifications * verify_s * 1e6},
          {"allocations_per_delivery", static_cast<double>(r.allocations) / n},
          {"minor_faults_per_delivery", static_cast<double>(r.minor_faults) / n},
          {"context_switches_per_delivery", static_cast<double>(r.context_switches) / n}};
}

void PrintText(const std::vector<nlohmann::json>& rows, const Options& opt) {
  std::printf(
      "inprocess_cost: %llu deliveries of %llu bytes to validated + retained (volatile), "
      "MemoryFabric, receiver and sender in one process\n",
      static_cast<unsigned long long>(opt.count), static_cast<unsigned long long>(opt.size));
  std::printf("%-14s %9s %9s %8s %8s %8s %8s %7s %7s %7s %8s %9s %8s %8s %8s\n", "mode", "per_s",
              "cpu_us", "sig/dlv", "dlv/sig", "rcpt/sig", "snd_sig", "sig_us", "ver/dlv", "ver_us",
              "excl_us", "allocs", "minflt", "ctxsw", "ring");
  for (const auto& j : rows) {
    std::printf(
        "%-14s %9.0f %9.1f %8.3f %8.1f %8.1f %8.2f %7.1f %7.2f %7.1f %8.1f %9.1f %8.2f %8.2f "
        "%8llu\n",
        j["mode"].get<std::string>().c_str(), j["per_second"].get<double>(),
        j["cpu_us_per_delivery"].get<double>(), j["signatures_per_delivery"].get<double>(),
        j["deliveries_per_signature"].get<double>(), j["receipts_per_signature"].get<double>(),
        j["sender_signatures_per_delivery"].get<double>(), j["signature_us"].get<double>(),
        j["verifications_per_delivery"].get<double>(), j["verification_us"].get<double>(),
        j["cpu_us_excluding_signatures"].get<double>(), j["allocations_per_delivery"].get<double>(),
        j["minor_faults_per_delivery"].get<double>(),
        j["context_switches_per_delivery"].get<double>(),
        static_cast<unsigned long long>(j["ring_deliveries"].get<uint64_t>()));
    if (j["failed"].get<uint64_t>() != 0) {
      std::printf("  %llu deliveries FAILED\n",
                  static_cast<unsigned long long>(j["failed"].get<uint64_t>()));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> uint64_t {
      return i + 1 < argc ? std::strtoull(argv[++i], nullptr, 10) : 0;
    };
    if (a == "--count") {
      opt.count = next();
    } else if (a == "--size") {
      opt.size = next();
    } else if (a == "--in-flight") {
      opt.in_flight = static_cast<uint32_t>(next());
    } else if (a == "--mode" && i + 1 < argc) {
      opt.mode = argv[++i];
    } else if (a == "--signed-sender") {
      opt.signed_sender = true;
    } else if (a == "--consume") {
      opt.consume = true;
    } else if (a == "--json") {
      opt.json = true;
    } else {
      std::cerr << "usage: inprocess_cost_bench [--count N] [--size BYTES] [--in-flight K] "
                   "[--mode both|one-at-a-time|in-flight] [--signed-sender] [--consume] [--json]\n";
      return 2;
    }
  }
  if (opt.count == 0 || opt.size == 0 || opt.in_flight == 0) {
    std::cerr << "inprocess_cost_bench: --count, --size and --in-flight must be positive\n";
    return 2;
  }
  std::vector<uint8_t> bytes(opt.size);
  FillPattern(26, 0, bytes.data(), bytes.size());
  const double sign_s = SignatureCost();
  const double verify_s = SignatureCost(/*verify=*/true);
  std::vector<nlohmann::json> rows;
  for (uint32_t in_flight : {1u, opt.in_flight}) {
    if ((in_flight == 1 && opt.mode == "in-flight") ||
        (in_flight != 1 && opt.mode == "one-at-a-time")) {
      continue;
    }
    const std::string mode =
        in_flight == 1 ? "one-at-a-time" : "in-flight-" + std::to_string(in_flight);
    auto r = RunMode(mode, opt, bytes, in_flight);
    if (!r.ok()) {
      std::cerr << "inprocess_cost_bench: " << mode << ": " << r.status().ToString() << "\n";
      return 1;
    }
    rows.push_back(Json(*r, sign_s, verify_s));
  }
  if (opt.json) {
    std::cout << nlohmann::json(rows).dump(2) << "\n";
  } else {
    PrintText(rows, opt);
  }
  for (const auto& j : rows) {
    if (j["failed"].get<uint64_t>() != 0) return 1;
  }
  return 0;
}
