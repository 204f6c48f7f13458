// writ serve: run a receiver until SIGTERM / SIGINT.
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include "command.h"
#include "common/thread.h"
#include "fabric/fault_fabric.h"
#include "protocol/control_channel.h"
#include "receiver/receiver_start.h"
#include "serve_cluster.h"
#include "serve_log.h"
#include "store/lifecycle.h"
#include "writ/receiver.h"
#include "writ/vocabulary.h"

namespace writ::cli {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:7233";
  std::string provider;
  std::string data;
  std::string out;  // --out: every retained delivery also as a file here
  std::string window_pool = "256MiB";
  std::string window_size = "32MiB";
  std::string scratch;
  std::string volatile_reserve = "auto";
  std::string verify_on_start = "unsynced";  // with --data: what recovery re-hashes
  std::string scrub_rate = "16MiB";          // with --data: the background scrub, per second
  std::vector<std::string> ttl;              // CLASS=DURATION, per retention class
  std::string test_store_faults;             // tests only
  bool test_fail_polls_on_usr2 = false;      // tests only
  std::string identity;
  std::string allow;
  std::vector<std::string> admin_keys;  // operator keys: may remove any delivery (`writ rm`)
  std::string max_message = "1MiB";
  std::string max_delivery = "1TiB";
  uint32_t max_deliveries_per_sender = 16;
  uint32_t max_windows_per_sender = 16;
  uint32_t digest_threads = 0;  // 0: min(4, hardware threads)
  std::string poll = "block";
  uint32_t ring_slots = 64;              // standing windows: slots per connection's ring
  std::string ring_slot_size = "64KiB";  // and the size of each
  std::string volatile_capacity = "0";
  uint32_t max_connections = 64;
  uint32_t max_connections_per_address = 16;
  uint32_t max_connections_per_sender = 16;
  std::string handshake_timeout = "10s";
  std::string idle_timeout = "120s";
  std::string grant_unused_timeout = "30s";
  std::string window_wait_timeout = "20s";
  std::string drain_timeout = "10s";
  std::string log_format = "text";
  bool quiet = false;
  bool verbose = false;
  std::string metrics;  // HOST:PORT for GET /metrics
  std::string exec;     // --exec: the processing command
  std::string exec_timeout = "60s";
  uint32_t exec_concurrency = 2;
  ServeClusterFlags cluster;  // --cluster, --domain (serve_cluster.h)
};

// "250ms", "10s", "2m"; a bare number is seconds.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  uint64_t per = 0;
  if (unit == "ms") per = 1;
  if (unit == "s" || unit.empty()) per = 1000;
  if (unit == "m") per = 60000;
  if (digits == 0 || digits > 9 || per == 0) {
    return Status::InvalidArgument("expected a duration such as 500ms, 10s or 2m, got '" +
                                   std::string(text) + "'");
  }
  const uint64_t n = std::stoull(std::string(text.substr(0, digits)));
  if (n == 0) return Status::InvalidArgument("a timeout must be longer than 0");
  return std::chrono::milliseconds(n * per);
}

// The connection limits and timeouts of `flags` into `options`.
Status ApplyLiveness(const ServeFlags& flags, ReceiverOptions& options) {
  auto capacity = ParseSize(flags.volatile_capacity);
  if (!capacity.ok()) return capacity.status().Annotate("--volatile-capacity");
  options.volatile_capacity_bytes = *capacity;
  if (flags.max_connections == 0 || flags.max_connections_per_address == 0 ||
      flags.max_connections_per_sender == 0) {
    return Status::InvalidArgument(
        "--max-connections, --max-connections-per-address and --max-connections-per-sender "
        "must be at least 1");
  }
  options.max_connections = flags.max_connections;
  options.max_connections_per_address = flags.max_connections_per_address;
  options.max_connections_per_sender = flags.max_connections_per_sender;
  const std::pair<const std::string*, std::chrono::milliseconds*> timeouts[] = {
      {&flags.handshake_timeout, &options.handshake_timeout},
      {&flags.idle_timeout, &options.idle_timeout},
      {&flags.grant_unused_timeout, &options.grant_unused_timeout},
      {&flags.window_wait_timeout, &options.window_wait_timeout}};
  const char* names[] = {"--handshake-timeout", "--idle-timeout", "--grant-unused-timeout",
                         "--window-wait-timeout"};
  for (size_t i = 0; i < std::size(timeouts); ++i) {
    auto t = ParseDuration(*timeouts[i].first);
    if (!t.ok()) return t.status().Annotate(names[i]);
    *timeouts[i].second = *t;
  }
  return Status::Ok();
}

// --exec: the processing step that runs a command, its output in the log.
Status ApplyExec(const ServeFlags& flags, ReceiverOptions& options,
                 const std::shared_ptr<ServeLog>& log) {
  if (flags.exec.empty()) return Status::Ok();
  auto timeout = ParseDuration(flags.exec_timeout);
  if (!timeout.ok()) return timeout.status().Annotate("--exec-timeout");
  if (flags.exec_concurrency == 0) {
    return Status::InvalidArgument("--exec-concurrency must be at least 1");
  }
  ExecStepOptions exec;
  exec.command = flags.exec;
  exec.timeout = *timeout;
  exec.concurrency = flags.exec_concurrency;
  exec.on_output = [log](const std::string& line) { log->Info("exec", line); };
  options.processing = ExecStep(std::move(exec));
  return Status::Ok();
}

// Blocks the stop signals in every thread (the caller waits for them) and raises the
// descriptor limit; returns the stop signals.
sigset_t PrepareProcess(const ServeFlags& flags) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (flags.test_fail_polls_on_usr2) sigaddset(&stop_signals, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Every connection and every volatile delivery being received holds descriptors: use
  // all the descriptors the hard limit allows, not the common soft default of 1024.
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  return stop_signals;
}

// The --data related options: what recovery re-hashes, the scrub; the time-to-lives.
Status StoreOptions(const ServeFlags& flags, ReceiverOptions& options) {
  // serve creates DIR, not its parents: a DIR nowhere to be created is a usage error (2),
  // unlike a damaged data directory (6).
  std::string dir = flags.data;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  std::error_code ec;
  if (!flags.data.empty() && !parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return Status::InvalidArgument("--data " + flags.data + ": " + parent.string() +
                                   " is not a directory");
  }
  auto scrub_rate = ParseSize(flags.scrub_rate);
  if (!scrub_rate.ok()) return scrub_rate.status().Annotate("--scrub-rate");
  options.verify_on_start = flags.verify_on_start;
  options.scrub_bytes_per_second = *scrub_rate;
  for (const std::string& ttl : flags.ttl) {
    auto parsed = store::ParseClassTtl(ttl);
    if (!parsed.ok()) return parsed.status().Annotate("--ttl");
    if (!options.ttl.emplace(parsed->first, parsed->second).second) {
      return Status::InvalidArgument("--ttl: " + std::string(RetentionName(parsed->first)) +
                                     " is given more than once");
    }
  }
  return Status::Ok();
}

// --metrics: checked here, so a malformed address is a usage error naming the flag.
Status MetricsOption(const ServeFlags& flags, ReceiverOptions& options) {
  if (flags.metrics.empty()) return Status::Ok();
  auto host_port = protocol::ParseHostPort(flags.metrics);
  if (!host_port.ok()) return Status::InvalidArgument("--metrics: " + host_port.status().message());
  options.metrics_listen = flags.metrics;
  return Status::Ok();
}

// What the operator sees once the receiver runs: the ready lines (stdout), then the rest.
void Greet(const Receiver& receiver, const ServeFlags& flags, ServeLog& log) {
  log.Ready("listening",
            "listening on " + receiver.listen_address() + " (provider " + receiver.provider() + ")",
            {{"address", receiver.listen_address()}, {"provider", receiver.provider()}});
  if (!receiver.metrics_address().empty()) {
    log.Ready("metrics", "metrics on http://" + receiver.metrics_address() + "/metrics",
              {{"address", receiver.metrics_address()}});
  }
  log.Info("serve", "receipts are signed with key " + receiver.key_id() + " (" +
                        receiver.public_key_hex() + ")");
  if (flags.allow.empty()) {
    log.Info("serve",
             "no --allow: any sender is admitted (announces that are signed are still checked)");
  } else {
    log.Info("serve", "admitting only the " + std::to_string(receiver.allowed_senders()) +
                          " sender key(s) in " + flags.allow);
  }
  if (!flags.exec.empty()) {
    log.Info("serve", "deliveries sent --until processed are processed by: " + flags.exec);
  }
  if (flags.data.empty()) log.Info("serve", "no --data: only volatile retention is offered");
}

// "3 (a, b, c)": how many, and the first few ids.
std::string Listed(const std::vector<std::string>& ids) {
  constexpr size_t kShown = 16;
  std::string out = std::to_string(ids.size());
  for (size_t i = 0; i < ids.size() && i < kShown; ++i) out += (i == 0 ? " (" : ", ") + ids[i];
  if (ids.size() > kShown) out += ", and " + std::to_string(ids.size() - kShown) + " more";
  return ids.empty() ? out : out + ")";
}

// Waits for a stop signal, looking at the receiver's health once a second meanwhile; the
// signal's number, or 0 once the fabric stopped making progress (Receiver::health).
// `test_faults` (--test-fail-polls-on-usr2 only): SIGUSR2 makes its polls fail.
int AwaitSignalOrFabricFailure(const Receiver& receiver, const sigset_t& stop_signals,
                               fabric::FaultInjectingFabric* test_faults) {
  const timespec kLookEvery{1, 0};
  for (;;) {
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &kLookEvery);
    if (signal_number == SIGUSR2 && test_faults != nullptr) {
      test_faults->FailPolls(
          Status::Transport("test fault injected: every poll fails (--test-fail-polls-on-usr2)"));
      continue;
    }
    if (signal_number > 0) return signal_number;
    if (!receiver.health().ok()) return 0;
  }
}

// A receiver whose fabric stopped making progress completes no write any more: it is shut
// down at once and the serve exits 4, for its supervisor to restart it (its retained
// deliveries survive that as their classes promise; docs/operating.md).
int ExitOnFabricFailure(Receiver& receiver, const std::function<void(const std::string&)>& log,
                        ClusterMembership& membership) {
  membership.Leave();
  log("the fabric stopped making progress: shutting down at once and exiting 4 for a restart");
  auto summary = receiver.Shutdown(std::chrono::milliseconds{0});
  if (summary.ok()) {
    log("shut down: " + std::to_string(summary->aborted.size()) +
        " delivery(ies) in progress aborted");
  }
  return ReportError(receiver.health());
}

// Waits for SIGTERM or SIGINT, then shuts the receiver down within `drain`. A second signal
// ends the process at once: every receipted delivery is already in the store (its receipt
// is sent only after its commit), and recovery removes what is not.
int AwaitStop(Receiver& receiver, const sigset_t& stop_signals, std::chrono::milliseconds drain,
              const std::function<void(const std::string&)>& log, ClusterMembership membership,
              fabric::FaultInjectingFabric* test_faults) {
  const int signal_number = AwaitSignalOrFabricFailure(receiver, stop_signals, test_faults);
  if (signal_number == 0) return ExitOnFabricFailure(receiver, log, membership);
  membership.Leave();  // first: no new sender places a copy here
  const char* name = sigabbrev_np(signal_number);
  log((name != nullptr ? "SIG" + std::string(name) : "signal") +
      ": shutting down within the drain timeout of " + std::to_string(drain.count()) +
      " ms (a second signal exits at once)");
  std::thread second;
  Status watching = StartThread(second, "the second-signal watcher", [stop_signals, log] {
    int again = 0;
    sigwait(&stop_signals, &again);
    log("second signal: exiting at once; deliveries in progress are abandoned (retained ones "
        "are intact; the next start's recovery removes partial files)");
    _exit(128 + again);
  });
  if (watching.ok()) second.detach();
  auto summary = receiver.Shutdown(drain);
  if (!summary.ok()) return ReportError(summary.status());
  log("shut down: " + Listed(summary->drained) + " delivery(ies) finished while draining, " +
      Listed(summary->aborted) + " aborted at the drain deadline; " +
      std::to_string(summary->receipts_signed) + " receipt(s) signed with " +
      std::to_string(summary->signatures) + " signature(s)");
  return kExitOk;
}

// `--volatile-reserve auto`: up to 8 window pools (2 GiB by default), at most an eighth of
// the host's memory. It grows only as large deliveries arrive (docs/retention.md).
uint64_t AdaptiveReserveLimit(uint64_t window_pool) {
  const uint64_t host_memory =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return std::min(8 * window_pool, host_memory / 8);
}

// Receiver::Start, or with the hidden test flags' faults (`test_faults`: the fabric whose
// polls --test-fail-polls-on-usr2 fails).
Result<std::unique_ptr<Receiver>> StartServeReceiver(const ReceiverOptions& options,
                                                     const ServeFlags& flags,
                                                     fabric::FaultInjectingFabric*& test_faults) {
  fabric::FabricOpener open_fabric = fabric::OpenFabricNode;
  if (flags.test_fail_polls_on_usr2) {
    open_fabric = fabric::FaultInjectingFabric::Wrapping(
        fabric::OpenFabricNode,
        [&test_faults](fabric::FaultInjectingFabric& made) { test_faults = &made; });
  }
  return receiver::StartReceiver(options, open_fabric, flags.test_store_faults);
}

int RunServe(const ServeFlags& flags) {
  auto host_port = protocol::ParseHostPort(flags.listen);
  if (!host_port.ok())
    return ReportError(Status::InvalidArgument("--listen: " + host_port.status().message()));
  auto pool = ParseSize(flags.window_pool);
  if (!pool.ok()) return ReportError(pool.status().Annotate("--window-pool"));
  auto window = ParseSize(flags.window_size);
  if (!window.ok()) return ReportError(window.status().Annotate("--window-size"));

  const bool adaptive_reserve = flags.volatile_reserve == "auto";
  auto reserve =
      adaptive_reserve ? Result<uint64_t>(uint64_t{0}) : ParseSize(flags.volatile_reserve);
  if (!reserve.ok()) return ReportError(reserve.status().Annotate("--volatile-reserve"));

  auto max_message = ParseSize(flags.max_message);
  if (!max_message.ok() || *max_message > UINT32_MAX || *max_message < 4096) {
    return ReportError(Status::InvalidArgument("--max-message: expected a size from 4KiB to 4GiB"));
  }
  auto max_delivery = ParseSize(flags.max_delivery);
  if (!max_delivery.ok()) return ReportError(max_delivery.status().Annotate("--max-delivery"));
  ReceiverOptions options;
  if (Status s = ApplyLiveness(flags, options); !s.ok()) return ReportError(s);
  auto drain = ParseDuration(flags.drain_timeout);
  if (!drain.ok()) return ReportError(drain.status().Annotate("--drain-timeout"));

  const sigset_t stop_signals = PrepareProcess(flags);
  options.listen_host = host_port->first;
  options.listen_port = host_port->second;
  options.provider = flags.provider;
  options.data_dir = flags.data;
  options.out_dir = flags.out;
  options.window_pool_bytes = *pool;
  options.window_bytes = std::min(*window, *pool);
  options.scratch_dir = flags.scratch;
  options.volatile_reserve_bytes = *reserve;
  if (adaptive_reserve) options.volatile_reserve_limit_bytes = AdaptiveReserveLimit(*pool);
  options.digest_threads = flags.digest_threads;
  options.busy_poll = flags.poll == "busy";
  auto ring_slot_size = ParseSize(flags.ring_slot_size);
  if (!ring_slot_size.ok())
    return ReportError(ring_slot_size.status().Annotate("--ring-slot-size"));
  if (flags.ring_slots > 65536) {
    return ReportError(Status::InvalidArgument("--ring-slots: at most 65536"));
  }
  options.ring_slots = flags.ring_slots;
  options.ring_slot_size = *ring_slot_size;
  Status store_flags = StoreOptions(flags, options);
  if (!store_flags.ok()) return ReportError(store_flags);
  // Every event (deliveries, refusals, recovery, the store, limits that hit), one line each
  // from any of the receiver's threads.
  auto log = std::make_shared<ServeLog>(flags.log_format == "json", flags.quiet, flags.verbose);
  options.on_event = [log](const LogEvent& event) { log->Emit(event); };
  options.log_each_delivery = flags.verbose;
  if (Status metrics = MetricsOption(flags, options); !metrics.ok()) return ReportError(metrics);
  if (Status exec = ApplyExec(flags, options, log); !exec.ok()) return ReportError(exec);
  options.identity_dir = flags.identity;
  options.allow_file = flags.allow;
  options.admin_keys = flags.admin_keys;
  options.max_message_bytes = static_cast<uint32_t>(*max_message);
  options.max_delivery_bytes = *max_delivery;
  options.max_deliveries_per_sender = flags.max_deliveries_per_sender;
  options.max_windows_per_sender = flags.max_windows_per_sender;
  if (Status s = ApplyServeCluster(flags.cluster, options); !s.ok()) return ReportError(s);
  fabric::FaultInjectingFabric* test_faults = nullptr;
  auto receiver = StartServeReceiver(options, flags, test_faults);
  if (!receiver.ok()) {
    Status offered = flags.provider.empty() ? Status::Ok() : CheckProviderOffered(flags.provider);
    return ReportError(offered.ok() ? receiver.status() : offered);
  }
  Greet(**receiver, flags, *log);
  auto membership = JoinCluster(flags.cluster, **receiver, flags.data, flags.identity, log);
  if (!membership.ok()) return ReportError(membership.status());
  return AwaitStop(
      **receiver, stop_signals, *drain,
      [log](const std::string& line) { log->Info("shutdown", line); },
      std::move(membership).value(), test_faults);
}

// Limits and timeouts: what one sender, one connection or one delivery may hold, and for how long.
void AddLimitOptions(CLI::App& app, ServeFlags& flags) {
  CLI::App* cmd = &app;
  cmd->add_option("--max-message", flags.max_message, "largest control message (an announce too)")
      ->capture_default_str();
  cmd->add_option("--max-delivery", flags.max_delivery, "largest delivery")->capture_default_str();
  cmd->add_option("--max-deliveries-per-sender", flags.max_deliveries_per_sender,
                  "deliveries one sender may have in progress")
      ->capture_default_str();
  cmd->add_option("--max-windows-per-sender", flags.max_windows_per_sender,
                  "windows one sender may hold at once")
      ->capture_default_str();
  cmd->add_option("--volatile-capacity", flags.volatile_capacity,
                  "bytes all volatile deliveries may hold together, their receipts included; 0: "
                  "half the host's memory (64GiB with --scratch)")
      ->capture_default_str();
  cmd->add_option("--max-connections", flags.max_connections,
                  "control connections at once (when full, the one idle longest makes room)")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-address", flags.max_connections_per_address,
                  "control connections from one IP address at once")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-sender", flags.max_connections_per_sender,
                  "control connections one signed sender (its key) may hold at once")
      ->capture_default_str();
  cmd->add_option("--handshake-timeout", flags.handshake_timeout,
                  "from connect to the sender's first message (500ms, 10s, 2m)")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", flags.idle_timeout,
                  "a connection with no delivery in progress and no message is closed after it")
      ->capture_default_str();
  cmd->add_option("--grant-unused-timeout", flags.grant_unused_timeout,
                  "a delivery whose granted windows see no chunk land for this long is aborted "
                  "(also bounds a delivery whose sender committed and left)")
      ->capture_default_str();
  cmd->add_option("--window-wait-timeout", flags.window_wait_timeout,
                  "a delivery that waits this long for a window is refused: no window available")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", flags.drain_timeout,
                  "on SIGTERM/SIGINT: how long deliveries in progress may take to finish before "
                  "they are aborted (a second signal exits at once)")
      ->capture_default_str();
}

// Running it for months: the processing command, logs and metrics.
void AddOperationOptions(CLI::App* cmd, ServeFlags* flags) {
  cmd->add_option("--exec", flags->exec,
                  "processing command, run by /bin/sh -c for each delivery sent --until processed: "
                  "the delivery on its stdin, WRIT_DELIVERY_ID, WRIT_BYTES, WRIT_RULE and "
                  "WRIT_DIGEST in its environment; exit 0 is the processed rung");
  cmd->add_option("--exec-timeout", flags->exec_timeout,
                  "with --exec: a command still running after this is killed (its whole process "
                  "group) and the delivery refused")
      ->capture_default_str();
  cmd->add_option("--exec-concurrency", flags->exec_concurrency,
                  "with --exec: commands running at once (other deliveries wait for one)")
      ->capture_default_str();
  cmd->add_option("--metrics", flags->metrics,
                  "HOST:PORT to serve Prometheus metrics at GET /metrics (port 0: any free "
                  "port; the serve prints the address)");
  cmd->add_option("--log-format", flags->log_format,
                  "text: 'writ: ...' lines; json: one JSON object a line (ts, level, event, "
                  "message and the event's fields)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("--quiet", flags->quiet,
                "log only warnings and errors (the ready lines on stdout still appear)");
  cmd->add_flag("--verbose", flags->verbose,
                "also log one line per delivery that ended retained (otherwise counted in one "
                "'deliveries' line a second)");
}

void RegisterServe(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Run a receiver until SIGTERM/SIGINT");
  cmd->add_option("--listen", flags->listen, "HOST:PORT for the control connection")
      ->capture_default_str();
  cmd->add_option(
      "--provider", flags->provider,
      "libfabric provider (tcp, tcp;ofi_rxm, shm, verbs, ...); default: best available");
  cmd->add_option("--data", flags->data, "data directory for durable retention");
  cmd->add_option("--out", flags->out,
                  "write every retained delivery as DIR/<id as a file name>, with "
                  "DIR/<name>.receipts.json beside it");
  cmd->add_option("--window-pool", flags->window_pool, "memory for all windows together")
      ->capture_default_str();
  cmd->add_option("--window-size", flags->window_size, "one window; a chunk must fit in it")
      ->capture_default_str();
  cmd->add_option("--digest-threads", flags->digest_threads,
                  "threads that digest received bytes; 0: min(4, hardware threads)")
      ->capture_default_str();
  cmd->add_option("--poll", flags->poll,
                  "block | busy: busy polls the fabric in a loop instead of sleeping (lower "
                  "latency, a core kept busy even when idle)")
      ->check(CLI::IsMember({"block", "busy"}))
      ->capture_default_str();
  cmd->add_option("--ring-slots", flags->ring_slots,
                  "standing windows: slots of each connection's ring, written without an "
                  "announce/grant round trip; 0: no rings")
      ->capture_default_str();
  cmd->add_option("--ring-slot-size", flags->ring_slot_size,
                  "standing windows: bytes per ring slot (the largest delivery a slot takes)")
      ->capture_default_str();
  cmd->add_option("--scratch", flags->scratch,
                  "hold volatile deliveries in unlinked files in this directory (default: in "
                  "anonymous memory on huge pages)");
  cmd->add_option("--volatile-reserve", flags->volatile_reserve,
                  "memory kept touched and ready for volatile deliveries (in 64MiB extents, "
                  "refilled at idle priority, on top of their capacity): they then skip the "
                  "first-touch cost of fresh memory. auto: grows to the largest delivery "
                  "announced, up to 8 x --window-pool and 1/8 of the host's memory, and keeps "
                  "the (cleared) memory of abandoned deliveries; 0: none")
      ->capture_default_str();
  cmd->add_option("--identity", flags->identity,
                  "directory of the key that signs receipts (default DATA/identity, else "
                  "~/.local/state/writ/receiver)");
  cmd->add_option("--verify-on-start", flags->verify_on_start,
                  "with --data: which retained payloads recovery re-hashes at start: all, unsynced "
                  "(process-restart ones, which a power cut may tear) or none (size only)")
      ->check(CLI::IsMember({"all", "unsynced", "none"}))
      ->capture_default_str();
  cmd->add_option("--scrub-rate", flags->scrub_rate,
                  "with --data: bytes per second the background scrub re-hashes retained payloads "
                  "at (quarantining any that fail); 0: no scrub")
      ->capture_default_str();
  cmd->add_option("--ttl", flags->ttl,
                  "CLASS=DURATION (repeatable, e.g. --ttl volatile=10m --ttl process-restart=7d): "
                  "deliveries of that class are promised for at least DURATION (90s, 10m, 12h, "
                  "7d), their retained receipt says until when, and are removed once it passed; "
                  "default: held until removed (writ store rm)")
      ->allow_extra_args(false);
  // Tests only (tests/faults): fail chosen file-system calls of the durable store.
  cmd->add_option("--test-store-faults", flags->test_store_faults,
                  "OP@N=ERR,...: see src/store/fault_env.h")
      ->group("");
  // Tests only (tests/integration): SIGUSR2 makes every poll of the fabric fail.
  cmd->add_flag("--test-fail-polls-on-usr2", flags->test_fail_polls_on_usr2)->group("");
  cmd->add_option("--allow", flags->allow,
                  "file of allowed senders' public keys (hex, one a line); default: anyone");
  cmd->add_option("--admin-key", flags->admin_keys,
                  "an operator's public key (hex, as `writ key show` prints it): its signed "
                  "`writ rm` may remove any delivery; repeatable");
  AddOperationOptions(cmd, flags.get());
  AddLimitOptions(*cmd, *flags);
  AddServeClusterOptions(*cmd, flags->cluster);
  cmd->callback([flags, &ctx] { ctx.exit_code = RunServe(*flags); });
}

}  // namespace

WRIT_REGISTER_COMMAND(10, RegisterServe);

}  // namespace writ::cli
