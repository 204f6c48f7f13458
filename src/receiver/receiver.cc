#include "writ/receiver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <list>
#include <thread>

#include "common/left_allocated.h"
#include "common/mutex.h"
#include "common/thread.h"
#include "fabric/progress_loop.h"
#include "protocol/control_channel.h"
#include "receipt/context.h"
#include "receiver/connection.h"
#include "receiver/delivery_log.h"
#include "receiver/metrics_server.h"
#include "receiver/out_dir.h"
#include "receiver/out_files.h"
#include "receiver/read_region.h"
#include "receiver/receiver_core.h"
#include "receiver/receiver_start.h"
#include "store/expiry_sweeper.h"
#include "store/fault_env.h"
#include "store/routing_store.h"
#include "store/volatile_store.h"

namespace writ {
namespace {

using namespace std::chrono_literals;

std::string DefaultIdentityDir(const std::string& data_dir) {
  if (!data_dir.empty()) return data_dir + "/identity";
  const char* home = std::getenv("HOME");
  const std::string base = std::string(home && *home ? home : "/tmp");
  // Create the parents; the identity directory itself is created 0700 by LoadOrCreate.
  for (const char* part : {"/.local", "/.local/state", "/.local/state/writ"}) {
    (void)mkdir((base + part).c_str(), 0755);
  }
  return base + "/.local/state/writ/receiver";
}

// What signed requests are bound to (ReceiverCore::signing_id): the issuer and the key.
Result<std::string> SigningIdOf(const std::string& issuer, const receipt::Identity& identity,
                                size_t max_id_bytes) {
  std::string id = issuer + "#" + receipt::PublicKeyHex(identity.public_key());
  if (id.size() > max_id_bytes) {
    return Status::InvalidArgument("--receiver-id: " + std::to_string(issuer.size()) +
                                   " bytes, too long to name this receiver with its key (at most " +
                                   std::to_string(max_id_bytes - 65) + ")");
  }
  return id;
}

class ReceiverImpl : public Receiver {
 public:
  ReceiverImpl(ReceiverOptions options, fabric::FabricOpener open_fabric, std::string store_faults,
               std::chrono::milliseconds progress_stuck_after)
      : open_fabric_(std::move(open_fabric)),
        store_faults_(std::move(store_faults)),
        progress_stuck_after_(progress_stuck_after) {
    recovery_lines_ = options.on_store_event;
    receiver::RouteLinesToEvents(options);
    core_.options = std::move(options);
  }
  ~ReceiverImpl() override { (void)Stop(); }

  Status Init();
  std::string listen_address() const override { return listener_->address(); }
  std::string provider() const override { return core_.node->provider().name(); }
  std::string key_id() const override { return core_.identity->key_id(); }
  size_t allowed_senders() const override { return core_.auth.allowed_count(); }
  std::string public_key_hex() const override {
    return receipt::PublicKeyHex(core_.identity->public_key());
  }
  std::string metrics_address() const override {
    return metrics_server_ ? metrics_server_->address() : "";
  }
  std::string MetricsText() const override;
  Status health() const override { return core_.fabric.status(); }
  Status Stop() override;
  Result<ShutdownSummary> Shutdown(std::chrono::milliseconds drain) override;
  Result<RemovedDelivery> Remove(const std::string& id, bool force) override;
  Status Expose(const std::string& name, std::span<uint8_t> buffer,
                ExposeOptions options) override {
    return core_.targets.Expose(name, buffer, std::move(options));
  }
  Status Revoke(const std::string& name) override { return core_.targets.Revoke(name); }
  Result<std::vector<uint8_t>> ReadRegion(const std::string& id, uint64_t k,
                                          uint64_t max_bytes) override {
    return receiver::ReadRetainedRegion(*core_.store, id, k, max_bytes);
  }
  Result<StoredDelivery> Held(const std::string& id) override {
    return receiver::HeldInStore(*core_.store, id);
  }
  Status Read(const std::string& id, uint64_t offset, std::span<uint8_t> out) override {
    return receiver::ReadRetained(*core_.store, id, offset, out);
  }
  Result<HeldBytes> View(const std::string& id, uint64_t offset, uint64_t length) override {
    WRIT_ASSIGN_OR_RETURN(store::HeldView held, core_.store->View(id, offset, length));
    return HeldBytes{held.bytes, std::move(held.keep)};
  }

 private:
  // Removes what expired while the receiver was down, then starts the expiry sweep.
  Status StartExpirySweep();
  Status LoadSenderKeys();
  void RemoveOutOf(const std::string& id) const;
  // Waits until every connection's thread has ended or `deadline` passed; true if all did.
  bool WaitForConnections(std::chrono::steady_clock::time_point deadline);
  size_t DeliveriesInProgress();
  void Tell(const std::string& line) const {
    if (core_.options.on_connection_event) core_.options.on_connection_event(line);
  }
  void AcceptLoop();
  void ReapFinished();
  // Runs `channel` on its own thread, or refuses it naming the limit.
  void Admit(protocol::ControlChannel channel) REQUIRES(conns_mu_);
  // Closes the connection idle longest to make room; false when every one is busy.
  bool EvictIdlest() REQUIRES(conns_mu_);
  void OnRecord(const fabric::WorkCompletion& record);
  // The progress loop's failure (on its thread or its watch's): kept, said once.
  void OnFabricFailure(const Status& why);
  void StartProgress();
  // Stop's last step: the progress thread and the fabric, unless the thread is stuck in it.
  Status StopFabric();
  Status StartMetrics();

  fabric::FabricOpener open_fabric_;
  receiver::ReceiverCore core_;
  std::optional<protocol::ControlListener> listener_;
  std::unique_ptr<fabric::ProgressLoop> progress_;
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> target_errors_{0};
  Mutex conns_mu_;
  struct Running {
    std::unique_ptr<receiver::Connection> connection;
    std::thread thread;
    std::string address;   // the peer's host: the per-address limit counts it
    bool evicted = false;  // closed to make room, its thread still ending
  };
  std::list<Running> conns_ GUARDED_BY(conns_mu_);
  bool stopped_ = false;
  std::string store_faults_;  // tests only: receiver/receiver_start.h
  const std::chrono::milliseconds progress_stuck_after_;
  std::unique_ptr<store::ExpirySweeper> sweeper_;  // after core_: stopped before its store
  // The caller's on_store_event: told recovery's findings, which on_event gets as "recovery".
  std::function<void(const std::string&)> recovery_lines_;
  store::VolatileStore* volatile_store_ = nullptr;  // in core_.store: its capacity in use
  std::unique_ptr<receiver::MetricsServer> metrics_server_;
};

// The --data store, after its recovery; tells on_store_event what recovery found.
Result<std::unique_ptr<store::Store>> OpenDurableStore(
    const ReceiverOptions& opt, const std::string& store_faults,
    const std::function<void(const std::string&)>& recovery_lines, receiver::Metrics& metrics) {
  store::DurableOptions dopt;
  WRIT_ASSIGN_OR_RETURN(dopt.verify, store::ParseVerifyOnStart(opt.verify_on_start));
  dopt.log = opt.on_store_event;
  dopt.scrubbed = [&metrics](store::ScrubFinding finding) { metrics.Scrubbed(finding); };
  dopt.scrub_bytes_per_second = opt.scrub_bytes_per_second;
  dopt.ttl = opt.ttl;
  store::FaultInjectionEnv* faults = nullptr;
  if (!store_faults.empty()) {
    auto env = store::FaultInjectionEnv::Parse(store_faults, store::Env::Default());
    if (!env.ok()) return env.status().Annotate("test store faults");
    faults = env->get();
    faults->set_on_inject(opt.on_store_event);
    dopt.env = std::shared_ptr<store::Env>(std::move(env).value());
  }
  store::RecoveryReport report;
  auto durable = store::DurableStore::Open(opt.data_dir, dopt, &report);
  if (!durable.ok()) {
    // Whatever stops the data directory from opening (missing, damaged, unreadable, locked
    // by another process) means the retention it offers cannot be reached: exit 6.
    const Status& s = durable.status();
    if (s.code() == ErrorCode::kInvalidArgument)
      return s.Annotate("data directory " + opt.data_dir);
    return Status::Retention("data directory " + opt.data_dir + ": " + s.message());
  }
  for (const auto& line : report.Lines()) {
    if (recovery_lines) recovery_lines(line);
    if (opt.on_event) opt.on_event(LogEvent{LogEvent::Level::kInfo, "recovery", line, {}});
  }
  if (faults != nullptr) faults->Arm();  // count the calls of deliveries, not of recovery
  return std::unique_ptr<store::Store>(std::move(durable).value());
}

// What a notification says of its writer decides what else a chunk needs to count:
// nothing (MSG: its endpoint; shm: its address), or its sender's `written` (rxm).
void HeedWriterNaming(receiver::ReceiverCore& core) {
  if (core.node->provider().names_writers()) core.router.RequireNamedWriters();
  core.writes_attested = core.node->provider().writes_need_attestation();
}

Status ReceiverImpl::Init() {
  const ReceiverOptions& opt = core_.options;
  // Malformed keys are refused before anything is created.
  WRIT_RETURN_IF_ERROR(LoadSenderKeys());
  protocol::Limits limits;
  limits.max_frame_bytes = opt.max_message_bytes;
  auto listener = protocol::ControlListener::Listen(opt.listen_host, opt.listen_port, limits);
  if (!listener.ok()) return listener.status().Annotate("control listener");
  listener_.emplace(std::move(listener).value());
  core_.issuer = opt.receiver_id.empty() ? "writ-serve@" + listener_->address() : opt.receiver_id;
  core_.failure_domain = opt.failure_domain;

  // The data directory first: recovery runs before anything else lives in it (the identity
  // defaults to DATA/identity) and before any sender is accepted.
  std::unique_ptr<store::Store> durable;
  if (!opt.data_dir.empty()) {
    WRIT_ASSIGN_OR_RETURN(durable,
                          OpenDurableStore(opt, store_faults_, recovery_lines_, core_.metrics));
  }
  if (!opt.out_dir.empty()) WRIT_RETURN_IF_ERROR(receiver::CheckOutDir(opt.out_dir));
  std::string identity_dir = opt.identity_dir;
  if (identity_dir.empty()) identity_dir = DefaultIdentityDir(opt.data_dir);
  auto identity = receipt::Identity::LoadOrCreate(identity_dir);
  if (!identity.ok()) return identity.status().Annotate("receiver identity");
  core_.identity.emplace(std::move(identity).value());
  WRIT_ASSIGN_OR_RETURN(core_.signing_id,
                        SigningIdOf(core_.issuer, *core_.identity, limits.max_id_bytes));
  core_.signer = std::make_unique<receiver::ReceiptSigner>(*core_.identity);

  fabric::NodeOptions node_options;
  node_options.provider.provider = opt.provider;
  node_options.provider.role = fabric::Role::kTarget;
  node_options.provider.node = opt.listen_host;
  node_options.provider.service = "0";
  WRIT_ASSIGN_OR_RETURN(core_.node, open_fabric_(node_options));
  WRIT_ASSIGN_OR_RETURN(core_.fabric_address, core_.node->LocalAddress());
  HeedWriterNaming(core_);
  core_.context = receipt::ContextFor(core_.node->provider(), CompletionLevel::kDelivery, true);
  // The receiver's own rungs rest on its notifications, not on any initiator completion level.
  core_.context.completion_level = "none: receiver-side notification";

  WRIT_ASSIGN_OR_RETURN(core_.pool,
                        receiver::WindowPool::Create(opt.window_pool_bytes, opt.window_bytes));
  const uint32_t digest_threads =
      opt.digest_threads != 0 ? opt.digest_threads
                              : std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 4);
  WRIT_ASSIGN_OR_RETURN(core_.digests, receiver::DigestPool::Start(digest_threads));
  uint64_t volatile_capacity = opt.volatile_capacity_bytes;
  if (volatile_capacity == 0) {
    const uint64_t host_memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                 static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    volatile_capacity = opt.scratch_dir.empty() ? host_memory / 2 : 64ull << 30;
  }
  store::VolatileStore::Options volatile_options;
  volatile_options.scratch_dir = opt.scratch_dir;
  volatile_options.capacity = volatile_capacity;
  volatile_options.reserve = opt.volatile_reserve_bytes;
  volatile_options.reserve_limit = opt.scratch_dir.empty() ? opt.volatile_reserve_limit_bytes : 0;
  volatile_options.on_event = opt.on_store_event;
  if (auto ttl = opt.ttl.find(RetentionClass::kVolatile); ttl != opt.ttl.end())
    volatile_options.ttl = ttl->second;
  WRIT_ASSIGN_OR_RETURN(std::unique_ptr<store::VolatileStore> volatile_store,
                        store::VolatileStore::Open(std::move(volatile_options)));
  volatile_store_ = volatile_store.get();
  if (durable) {
    core_.store =
        std::make_unique<store::RoutingStore>(std::move(volatile_store), std::move(durable));
  } else {
    core_.store = std::move(volatile_store);
  }
  WRIT_RETURN_IF_ERROR(StartExpirySweep());

  StartProgress();
  WRIT_RETURN_IF_ERROR(StartMetrics());
  WRIT_RETURN_IF_ERROR(StartThread(accept_thread_, "the accept thread", [this] { AcceptLoop(); }));
  return Status::Ok();
}

// The allow list (--allow) and the operator keys (--admin-key).
Status ReceiverImpl::LoadSenderKeys() {
  const ReceiverOptions& opt = core_.options;
  if (!opt.allow_file.empty()) {
    WRIT_ASSIGN_OR_RETURN(core_.auth, receiver::SenderAuth::FromAllowFile(opt.allow_file));
  }
  for (const std::string& hex : opt.admin_keys) {
    auto key = receipt::ParsePublicKeyHex(hex);
    if (!key.ok())
      return Status::InvalidArgument("--admin-key " + hex + ": " + key.status().message());
    core_.admin_keys.push_back(*key);
  }
  return Status::Ok();
}

Status ReceiverImpl::StartExpirySweep() {
  // Often enough that a delivery outlives its promised time by about a second at most.
  constexpr auto kSweepPeriod = 1000ms;
  auto remove_out = [this](const store::Removal& removal) { RemoveOutOf(removal.id); };
  (void)store::SweepExpired(*core_.store, store::NowUnixMs(), core_.options.on_store_event,
                            remove_out);
  WRIT_ASSIGN_OR_RETURN(sweeper_,
                        store::ExpirySweeper::Start(*core_.store, kSweepPeriod,
                                                    core_.options.on_store_event, remove_out));
  return Status::Ok();
}

// A delivery the store no longer holds leaves no --out file behind (out_files.h).
void ReceiverImpl::RemoveOutOf(const std::string& id) const {
  if (core_.options.out_dir.empty()) return;
  auto removed = receiver::RemoveOutFiles(core_.options.out_dir, id);
  const std::string line = removed.ok() ? *removed : "out: " + removed.status().message();
  if (!line.empty() && core_.options.on_store_event) core_.options.on_store_event(line);
}

Result<RemovedDelivery> ReceiverImpl::Remove(const std::string& id, bool force) {
  WRIT_ASSIGN_OR_RETURN(store::Removal removal, core_.store->Remove(id, force, store::NowUnixMs()));
  if (core_.options.on_store_event) {
    core_.options.on_store_event(store::RemovalLine(
        removal, force ? "removed by Receiver::Remove (forced)" : "removed by Receiver::Remove"));
  }
  RemoveOutOf(removal.id);
  RemovedDelivery out;
  out.id = removal.id;
  out.retention = removal.retention;
  out.bytes = removal.bytes;
  if (removal.held_until_ms != 0) out.held_until = store::UnixMsRfc3339(removal.held_until_ms);
  out.promise_broken = removal.promise_broken;
  return out;
}

Status ReceiverImpl::StartMetrics() {
  if (core_.options.metrics_listen.empty()) return Status::Ok();
  auto host_port = protocol::ParseHostPort(core_.options.metrics_listen);
  if (!host_port.ok()) return host_port.status().Annotate("metrics listen address");
  WRIT_ASSIGN_OR_RETURN(metrics_server_,
                        receiver::MetricsServer::Start(host_port->first, host_port->second,
                                                       [this] { return MetricsText(); }));
  return Status::Ok();
}

std::string ReceiverImpl::MetricsText() const {
  receiver::MetricGauges gauges;
  gauges.windows = core_.pool->count();
  gauges.windows_in_use = core_.pool->in_use();
  gauges.deliveries_in_progress = core_.ActiveIds();
  gauges.volatile_capacity_bytes = volatile_store_->capacity();
  gauges.volatile_used_bytes = volatile_store_->used_bytes();
  return core_.metrics.Render(gauges);
}

void ReceiverImpl::OnRecord(const fabric::WorkCompletion& record) {
  if (!record.ok()) {
    target_errors_.fetch_add(1);
    return;
  }
  auto op = record.operation();
  auto data = record.remote_data();
  auto source = record.source();
  if (op.ok() && *op == fabric::Operation::kRemoteWrite && data.ok() && source.ok()) {
    core_.router.Route(fabric::Peer{record.endpoint(), *source}, static_cast<uint32_t>(*data));
  }
}

void ReceiverImpl::AcceptLoop() {
  while (!stopping_.load()) {
    auto channel = listener_->Accept(200ms);
    ReapFinished();
    if (!channel.ok()) continue;
    MutexLock lock(conns_mu_);
    if (stopping_.load()) break;
    Admit(std::move(channel).value());
  }
}

void ReceiverImpl::ReapFinished() {
  MutexLock lock(conns_mu_);
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (it->connection->finished()) {
      it->thread.join();
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void ReceiverImpl::Admit(protocol::ControlChannel channel) {
  const ReceiverOptions& opt = core_.options;
  const std::string peer = channel.peer();  // a copy: the channel moves into the connection
  std::string address = peer.substr(0, peer.rfind(':'));
  size_t live = 0;
  size_t from_address = 0;
  for (const Running& r : conns_) {
    if (r.evicted) continue;
    ++live;
    if (r.address == address) ++from_address;
  }
  std::string refusal;
  auto reason = protocol::RefuseReason::kLimit;
  if (core_.shutdown.begun()) {
    refusal = "the receiver is shutting down and admits no new connection";
    reason = protocol::RefuseReason::kShuttingDown;
  } else if (from_address >= opt.max_connections_per_address) {
    refusal = "too many connections from " + address + " (limit " +
              std::to_string(opt.max_connections_per_address) + " per address)";
  } else if (live >= opt.max_connections && !EvictIdlest()) {
    refusal = "too many connections (limit " + std::to_string(opt.max_connections) +
              ", every one with a delivery in progress)";
  }
  if (!refusal.empty()) {
    if (opt.on_connection_event)
      opt.on_connection_event("connection from " + peer + " refused: " + refusal);
    channel.set_send_timeout(1000ms);  // a refused peer does not hold the accept loop
    core_.metrics.Refused(reason);
    (void)channel.Send(protocol::Refuse{"", reason, refusal});
    return;
  }
  conns_.push_back(Running{
      std::make_unique<receiver::Connection>(core_, std::move(channel)), {}, std::move(address)});
  receiver::Connection* connection = conns_.back().connection.get();
  Status started = StartThread(conns_.back().thread, "a thread for the connection from " + peer,
                               [connection] { connection->Run(); });
  if (!started.ok()) {
    // Under load the process may have no thread to give: this peer is refused, the serve
    // goes on (an exception here used to end the process).
    if (opt.on_connection_event) opt.on_connection_event(started.message());
    conns_.pop_back();
  }
}

bool ReceiverImpl::EvictIdlest() {
  Running* idlest = nullptr;
  std::optional<receiver::Connection::Clock::time_point> since;
  for (Running& r : conns_) {
    if (r.evicted) continue;
    const auto idle = r.connection->idle_since();
    if (idle && (!since || *idle < *since)) {
      since = idle;
      idlest = &r;
    }
  }
  if (idlest == nullptr) return false;
  idlest->evicted = true;
  idlest->connection->Shutdown();  // its thread sees the close and ends
  if (core_.options.on_connection_event) {
    core_.options.on_connection_event(
        "connection from " + idlest->address +
        " closed: idle (no delivery in progress), to make room for a new connection");
  }
  return true;
}

Status ReceiverImpl::Stop() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  metrics_server_.reset();  // its thread ends; no scrape reads a stopping receiver
  // A delivery whose sender committed and left no longer watches its control connection:
  // the abort phase is what ends it now rather than at its grant-unused timeout.
  core_.shutdown.BeginAbort();
  stopping_.store(true);
  if (listener_) listener_->Shutdown();  // the accept thread sees it now, not at its timeout
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    MutexLock lock(conns_mu_);
    for (auto& running : conns_) running.connection->Shutdown();
    for (auto& running : conns_) {
      if (running.thread.joinable()) running.thread.join();
    }
    conns_.clear();
  }
  ReportRetainedSummary(core_);
  sweeper_.reset();
  return StopFabric();
}

void ReceiverImpl::StartProgress() {
  progress_ = std::make_unique<fabric::ProgressLoop>(
      *core_.node, [this](const fabric::WorkCompletion& r) { OnRecord(r); },
      [this](const Status& why) { OnFabricFailure(why); },
      core_.options.busy_poll ? fabric::ProgressLoop::Mode::kBusy
                              : fabric::ProgressLoop::Mode::kBlock,
      progress_stuck_after_);
  core_.progress = progress_.get();
}

Status ReceiverImpl::StopFabric() {
  if (progress_) progress_->Stop();
  core_.progress = nullptr;
  if (progress_ && progress_->abandoned()) {
    // Its thread may still come back into the loop and the node (and touch the windows'
    // registrations): leave all three allocated, as the sender leaves a stuck session.
    LeaveAllocated(progress_);
    LeaveAllocated(core_.node);
    LeaveAllocated(core_.pool);
    return core_.fabric.status();
  }
  progress_.reset();
  return core_.node ? core_.node->Close() : Status::Ok();
}

void ReceiverImpl::OnFabricFailure(const Status& why) {
  core_.fabric.Fail(why);
  const ReceiverOptions& opt = core_.options;
  if (opt.on_event) {
    opt.on_event(
        LogEvent{LogEvent::Level::kError,
                 "fabric",
                 "the fabric stopped making progress: " + why.message() +
                     "; new deliveries, and those still waiting for chunks, are refused until the "
                     "receiver is restarted",
                 {}});
  }
}

size_t ReceiverImpl::DeliveriesInProgress() {
  MutexLock lock(conns_mu_);
  size_t n = 0;
  for (const Running& r : conns_) {
    if (!r.connection->finished() && !r.connection->idle_since()) ++n;
  }
  return n;
}

bool ReceiverImpl::WaitForConnections(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    // Read before looking, so a connection ending in between is not waited for in vain.
    const uint64_t seen = core_.shutdown.connections_ended();
    {
      MutexLock lock(conns_mu_);
      if (std::all_of(conns_.begin(), conns_.end(),
                      [](const Running& r) { return r.connection->finished(); })) {
        return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    core_.shutdown.WaitForConnectionEnd(seen, deadline);
  }
}

// Admission stops at once (the accept loop refuses, announces are refused); connections
// end as their deliveries do; at the deadline the rest are refused and ended by their own
// threads (so a delivery is never cut between its store commit and its receipt); then Stop.
Result<ShutdownSummary> ReceiverImpl::Shutdown(std::chrono::milliseconds drain) {
  using Clock = std::chrono::steady_clock;
  // Enough for every connection's thread to see the abort and send its refusal (a send to
  // a peer that does not read is cut short by Stop's closing of the connections).
  constexpr auto kAbortGrace = 2000ms;
  if (!stopped_) {
    core_.shutdown.BeginDrain(drain);
    Tell("shutting down: admitting nothing new; " + std::to_string(DeliveriesInProgress()) +
         " delivery(ies) in progress get up to " + std::to_string(drain.count()) + " ms to finish");
    if (!WaitForConnections(Clock::now() + drain)) {
      core_.shutdown.NoteDeadlinePassed();
      core_.shutdown.BeginAbort();
      (void)WaitForConnections(Clock::now() + kAbortGrace);
    }
  }
  WRIT_RETURN_IF_ERROR(Stop());
  ShutdownSummary summary = core_.shutdown.Summary();
  summary.receipts_signed = core_.signer->receipts_signed();
  summary.signatures = core_.signer->signatures();
  return summary;
}

}  // namespace

namespace receiver {

Result<std::unique_ptr<Receiver>> StartReceiver(ReceiverOptions options,
                                                fabric::FabricOpener open_fabric,
                                                std::string store_faults,
                                                std::chrono::milliseconds progress_stuck_after) {
  auto receiver = std::make_unique<ReceiverImpl>(std::move(options), std::move(open_fabric),
                                                 std::move(store_faults), progress_stuck_after);
  WRIT_RETURN_IF_ERROR(receiver->Init());
  return std::unique_ptr<Receiver>(std::move(receiver));
}

}  // namespace receiver

Result<std::unique_ptr<Receiver>> Receiver::Start(ReceiverOptions options) {
  return receiver::StartReceiver(std::move(options), fabric::OpenFabricNode, "");
}

}  // namespace writ
