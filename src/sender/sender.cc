#include "writ/sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "fabric/node.h"
#include "protocol/codec.h"
#include "protocol/control_channel.h"
#include "protocol/digest.h"
#include "receipt/context.h"
#include "receipt/identity.h"
#include "receipt/signing.h"
#include "sender/delivery_source.h"

namespace writ {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
// How long a finally failed write waits for the receiver's reason before it is reported
// as a transport failure.
constexpr std::chrono::milliseconds kRefusalGrace{200};
using protocol::RefuseReason;

Status StatusForRefusal(const protocol::Refuse& r, const std::string& id) {
  const std::string msg = "receiver refused delivery " +
                          (r.delivery_id.empty() ? id : r.delivery_id) + " (" +
                          std::string(protocol::RefuseReasonName(r.reason)) + "): " + r.detail;
  switch (r.reason) {
    case RefuseReason::kValidation: return Status::Validation(msg);
    case RefuseReason::kRetention: return Status::Retention(msg);
    default: return Status::Refused(msg);
  }
}

// Where to reach a MSG target: the sockaddr it listens on, or the control host for a
// wildcard listen address.
Result<std::pair<std::string, std::string>> MsgTargetAddress(const std::vector<uint8_t>& address,
                                                             const std::string& control_host) {
  if (address.size() != sizeof(sockaddr_in)) {
    return Status::Unsupported("the receiver's fabric address is not an IPv4 socket address");
  }
  sockaddr_in sin;
  std::memcpy(&sin, address.data(), sizeof sin);
  if (sin.sin_family != AF_INET) return Status::Unsupported("fabric address is not AF_INET");
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &sin.sin_addr, host, sizeof host);
  std::string node = sin.sin_addr.s_addr == htonl(INADDR_ANY) ? control_host : host;
  return std::make_pair(node, std::to_string(ntohs(sin.sin_port)));
}

std::string LocalHostOf(int fd) {
  sockaddr_in sin{};
  socklen_t len = sizeof sin;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len) != 0 || sin.sin_family != AF_INET) {
    return "127.0.0.1";
  }
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &sin.sin_addr, host, sizeof host);
  return host;
}

int RungOrder(ReceiptRung rung) {
  switch (rung) {
    case ReceiptRung::kTransport: return 1;
    case ReceiptRung::kReceived: return 2;
    case ReceiptRung::kValidated: return 3;
    case ReceiptRung::kProcessed: return 4;
    case ReceiptRung::kRetained: return 0;  // not a rung: retention is orthogonal
  }
  return 0;
}

class SendSession {
 public:
  SendSession(const SendOptions& options, DeliveryOutcome& out) : opt_(options), out_(out) {}
  ~SendSession() {
    (void)staging_region_.Close();
    if (node_) (void)node_->Close();
    std::free(staging_);
  }

  Status Run(const std::string& path);

 private:
  struct Slot {
    bool busy = false;
    uint64_t request_id = 0;
    uint64_t chunk = 0;
    uint32_t window = 0;
    uint32_t attempt = 0;
    uint64_t length = 0;
  };

  Status Prepare(const std::string& path);
  Status ConnectFabric(const protocol::Hello& hello, const std::string& control_host);
  Status Loop();
  Status ReadControl(std::chrono::milliseconds wait);
  Status OnMessage(const protocol::Message& message);
  Status PostReady();
  Status Post(Slot& slot, size_t index);
  Status PollCompletions();
  void AddReceipt(Receipt receipt);
  bool Done() const;
  std::string LastRung() const;
  Status Fail(Status status) const {
    return status.Annotate("delivery " + out_.delivery.id + ", last rung reached: " + LastRung());
  }

  const SendOptions& opt_;
  DeliveryOutcome& out_;
  // The announced chunk size: the requested one, or the whole delivery when smaller.
  uint64_t chunk_size_ = 0;
  std::optional<sender::DeliverySource> source_;
  std::optional<receipt::Identity> identity_;
  std::vector<uint8_t> digest_;
  std::optional<protocol::ControlChannel> channel_;
  std::unique_ptr<fabric::FabricNode> node_;
  fabric::Peer peer_;
  CompletionLevel granted_level_ = CompletionLevel::kDelivery;
  uint8_t* staging_ = nullptr;
  uint64_t slot_bytes_ = 0;
  fabric::MemoryRegion staging_region_;
  std::vector<Slot> slots_;
  std::map<uint32_t, protocol::Grant> grants_;
  std::vector<std::pair<uint64_t, uint32_t>> ready_;  // (chunk, window), in grant order
  size_t ready_next_ = 0;
  uint64_t next_request_id_ = 1;
  uint64_t chunks_done_ = 0;
  uint64_t bytes_done_ = 0;
  bool commit_sent_ = false;
  Clock::time_point last_progress_ = Clock::now();
  std::vector<fabric::WorkCompletion> records_;
};

Status SendSession::Prepare(const std::string& path) {
  if (opt_.chunk_size == 0) return Status::InvalidArgument("chunk size must be positive");
  if (opt_.depth == 0) return Status::InvalidArgument("depth must be at least 1");
  if (opt_.max_attempts == 0) return Status::InvalidArgument("attempts must be at least 1");
  WRIT_ASSIGN_OR_RETURN(sender::DeliverySource source, sender::DeliverySource::Open(path));
  source_.emplace(std::move(source));
  out_.delivery.id = opt_.id.empty() ? source_->name() : opt_.id;
  out_.delivery.bytes = source_->size();
  out_.delivery.rule = std::string(protocol::RuleName(opt_.rule));
  chunk_size_ =
      out_.delivery.bytes == 0 ? opt_.chunk_size : std::min(opt_.chunk_size, out_.delivery.bytes);
  out_.delivery.chunk_size = chunk_size_;
  out_.delivery.chunks =
      out_.delivery.bytes == 0 ? 0 : (out_.delivery.bytes + chunk_size_ - 1) / chunk_size_;
  if (!opt_.identity_dir.empty()) {
    auto identity = receipt::Identity::LoadOrCreate(opt_.identity_dir);
    if (!identity.ok()) return identity.status().Annotate("sender identity");
    identity_.emplace(std::move(identity).value());
  }
  WRIT_ASSIGN_OR_RETURN(digest_, source_->Digest(opt_.rule));
  out_.delivery.digest = protocol::ToHex(digest_);
  out_.portion_request_ids.assign(out_.delivery.chunks, 0);
  return Status::Ok();
}

Status SendSession::ConnectFabric(const protocol::Hello& hello, const std::string& control_host) {
  if (!opt_.provider.empty() && opt_.provider != hello.provider) {
    return Status::InvalidArgument("the receiver serves provider '" + hello.provider + "', not '" +
                                   opt_.provider + "'");
  }
  fabric::NodeOptions node_options;
  node_options.provider.provider = hello.provider;
  node_options.provider.role = fabric::Role::kInitiator;
  node_options.max_outstanding = opt_.depth;
  if (fabric::EndpointKindFor(hello.provider) == fabric::EndpointKind::kMsg) {
    WRIT_ASSIGN_OR_RETURN(auto target, MsgTargetAddress(hello.fabric_address, control_host));
    node_options.provider.node = target.first;
    node_options.provider.service = target.second;
    WRIT_ASSIGN_OR_RETURN(node_, fabric::FabricNode::Open(node_options));
    WRIT_ASSIGN_OR_RETURN(peer_, node_->Connect(10s));
  } else {
    if (hello.provider != "shm") node_options.provider.node = LocalHostOf(channel_->fd());
    WRIT_ASSIGN_OR_RETURN(node_, fabric::FabricNode::Open(node_options));
    WRIT_ASSIGN_OR_RETURN(peer_, node_->AddPeer(hello.fabric_address));
  }
  granted_level_ = node_->provider().Grant(opt_.level);
  out_.context = receipt::ContextFor(node_->provider(), granted_level_, true);

  // Staging: `depth` chunk buffers, registered once and reused for every chunk.
  slot_bytes_ = std::max<uint64_t>(4096, std::min(chunk_size_, out_.delivery.bytes));
  slot_bytes_ = (slot_bytes_ + 4095) / 4096 * 4096;
  const uint64_t total = slot_bytes_ * opt_.depth;
  staging_ = static_cast<uint8_t*>(std::aligned_alloc(4096, total));
  if (staging_ == nullptr) return Status::Internal("cannot allocate staging buffers");
  WRIT_ASSIGN_OR_RETURN(staging_region_,
                        node_->Register(staging_, total, fabric::Access::kLocalSource));
  slots_.assign(opt_.depth, Slot{});
  return Status::Ok();
}

Status SendSession::Run(const std::string& path) {
  WRIT_RETURN_IF_ERROR(Prepare(path));
  auto host_port = protocol::ParseHostPort(opt_.to);
  if (!host_port.ok()) return Status::InvalidArgument("--to: " + host_port.status().message());
  auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second, 10s);
  if (!channel.ok()) {
    return Status::Transport("cannot reach the receiver at " + opt_.to + ": " +
                             channel.status().message());
  }
  channel_.emplace(std::move(channel).value());
  auto first = channel_->Receive(10s);
  if (!first.ok())
    return Status::Transport("no hello from the receiver: " + first.status().message());
  if (const auto* refuse = std::get_if<protocol::Refuse>(&*first)) {
    return StatusForRefusal(*refuse, out_.delivery.id);
  }
  const auto* hello = std::get_if<protocol::Hello>(&*first);
  if (hello == nullptr) return Status::Malformed("the receiver did not start with a hello");
  WRIT_RETURN_IF_ERROR(ConnectFabric(*hello, host_port->first));

  protocol::Announce announce;
  announce.delivery_id = out_.delivery.id;
  announce.bytes = out_.delivery.bytes;
  announce.chunk_size = chunk_size_;
  announce.rule = opt_.rule;
  announce.digest = digest_;
  announce.until = opt_.until;
  announce.retention = opt_.retention.value_or(RetentionClass::kVolatile);
  if (identity_) {
    const auto& key = identity_->public_key();
    announce.sender_key.assign(key.begin(), key.end());
    announce.nonce.resize(protocol::kNonceBytes);
    if (getrandom(announce.nonce.data(), announce.nonce.size(), 0) !=
        static_cast<ssize_t>(announce.nonce.size())) {
      return Status::Io("getrandom failed for the announce nonce", errno);
    }
    announce.time_ms =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    // Signed for this receiver only: its id is part of the signed bytes.
    WRIT_ASSIGN_OR_RETURN(
        auto sig, identity_->Sign(protocol::AnnounceSigningBytes(announce, hello->receiver_id)));
    announce.signature.assign(sig.begin(), sig.end());
  }
  if (Status sent = channel_->Send(announce); !sent.ok()) {
    return sent.code() == ErrorCode::kInvalidArgument ? sent : Status::Transport(sent.message());
  }
  return Loop();
}

Status SendSession::Loop() {
  while (!Done()) {
    const bool busy =
        ready_next_ < ready_.size() ||
        std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; });
    WRIT_RETURN_IF_ERROR(ReadControl(busy ? 0ms : 20ms));
    WRIT_RETURN_IF_ERROR(PostReady());
    WRIT_RETURN_IF_ERROR(PollCompletions());
    if (!commit_sent_ && chunks_done_ == out_.delivery.chunks && out_.bytes_moved) {
      Receipt transport;
      transport.rung = ReceiptRung::kTransport;
      transport.delivery = out_.delivery;
      transport.observer = "sender";
      transport.issuer = "writ-send@pid" + std::to_string(getpid());
      transport.issued_at = NowRfc3339();
      transport.context = out_.context;
      transport.observed_chunks = out_.delivery.chunks;
      uint64_t records = out_.work_completions.size();
      transport.statement = "each of the " + std::to_string(out_.delivery.chunks) +
                            " chunk write requests completed with success at completion level " +
                            out_.context.completion_level + " (" + std::to_string(records) +
                            " completion records read)";
      transport.does_not_establish =
          std::string(fabric::CompletionLevelDoesNotGuarantee(granted_level_));
      if (identity_) WRIT_RETURN_IF_ERROR(receipt::SignReceipt(transport, *identity_));
      AddReceipt(std::move(transport));
      WRIT_RETURN_IF_ERROR(channel_->Send(protocol::Commit{out_.delivery.id}));
      commit_sent_ = true;
      last_progress_ = Clock::now();
    }
    if (Clock::now() - last_progress_ > opt_.stall_timeout) {
      return Fail(
          Status::Timeout("no progress for " + std::to_string(opt_.stall_timeout.count()) + " ms"));
    }
  }
  return Status::Ok();
}

Status SendSession::ReadControl(std::chrono::milliseconds wait) {
  pollfd pfd{channel_->fd(), POLLIN, 0};
  const int ready = poll(&pfd, 1, static_cast<int>(wait.count()));
  if (ready <= 0) return Status::Ok();
  auto message = channel_->Receive(10s);
  while (message.ok()) {
    last_progress_ = Clock::now();
    WRIT_RETURN_IF_ERROR(OnMessage(*message));
    if (Done()) return Status::Ok();
    message = channel_->Receive(0ms);
  }
  if (message.status().code() == ErrorCode::kTimeout) return Status::Ok();
  return Fail(
      Status::Transport("control connection to the receiver lost: " + message.status().message()));
}

Status SendSession::OnMessage(const protocol::Message& message) {
  const std::string& id = out_.delivery.id;
  if (const auto* grant = std::get_if<protocol::Grant>(&message)) {
    const uint64_t chunks = out_.delivery.chunks;
    if (grant->delivery_id != id || grant->window_id == 0 || grant->window_id > 0xFFFF ||
        grant->first_chunk >= chunks || grant->chunk_count > chunks - grant->first_chunk ||
        grant->length < std::min(out_.delivery.bytes - grant->first_chunk * chunk_size_,
                                 uint64_t{grant->chunk_count} * chunk_size_)) {
      return Fail(Status::Malformed("the receiver sent an inconsistent grant (window " +
                                    std::to_string(grant->window_id) + ")"));
    }
    grants_[grant->window_id] = *grant;
    for (uint32_t i = 0; i < grant->chunk_count; ++i) {
      ready_.emplace_back(grant->first_chunk + i, grant->window_id);
    }
    return Status::Ok();
  }
  if (const auto* wire = std::get_if<protocol::Receipt>(&message)) {
    auto receipt = ReceiptFromJson(wire->json);
    if (!receipt.ok()) return Fail(receipt.status().Annotate("receipt from the receiver"));
    const DeliveryRef& ref = receipt->delivery;
    if (ref.id != id || ref.bytes != out_.delivery.bytes || ref.digest != out_.delivery.digest) {
      return Fail(Status::Malformed("the receiver sent a receipt about another object (" + ref.id +
                                    ", " + std::to_string(ref.bytes) + " bytes, " + ref.digest +
                                    ")"));
    }
    if (chunks_done_ == 0 && grants_.empty() && !commit_sent_) out_.bytes_moved = false;
    AddReceipt(std::move(receipt).value());
    return Status::Ok();
  }
  if (const auto* refuse = std::get_if<protocol::Refuse>(&message)) {
    return Fail(StatusForRefusal(*refuse, id));
  }
  if (const auto* abort = std::get_if<protocol::Abort>(&message)) {
    return Fail(Status::Transport("the receiver aborted: " + abort->detail));
  }
  return Fail(Status::Malformed(std::string("unexpected '") +
                                std::string(protocol::MessageTypeName(message)) +
                                "' message from the receiver"));
}

Status SendSession::PostReady() {
  for (size_t i = 0; i < slots_.size() && ready_next_ < ready_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.busy) continue;
    const auto [chunk, window] = ready_[ready_next_++];
    slot.chunk = chunk;
    slot.window = window;
    slot.attempt = 0;
    slot.length = std::min(chunk_size_, out_.delivery.bytes - chunk * chunk_size_);
    std::span<uint8_t> bytes(staging_ + i * slot_bytes_, slot.length);
    WRIT_RETURN_IF_ERROR(source_->Read(chunk * chunk_size_, bytes));
    if (opt_.corrupt_chunk && *opt_.corrupt_chunk == chunk && slot.length > 0) {
      bytes[slot.length / 2] ^= 0xFF;  // the announced digest no longer matches
    }
    WRIT_RETURN_IF_ERROR(Post(slot, i));
  }
  if (ready_next_ == ready_.size()) {
    ready_.clear();
    ready_next_ = 0;
  }
  return Status::Ok();
}

Status SendSession::Post(Slot& slot, size_t index) {
  const protocol::Grant& grant = grants_.at(slot.window);
  const uint64_t in_window = slot.chunk - grant.first_chunk;
  fabric::WriteRequest req;
  req.request_id = next_request_id_++;
  req.peer = peer_;
  req.local = &staging_region_;
  req.local_offset = index * slot_bytes_;
  req.length = slot.length;
  req.remote = fabric::RegionDescriptor{grant.remote_address, grant.key, grant.length};
  req.remote_offset = in_window * chunk_size_;
  req.level = opt_.level;
  req.remote_data = (slot.window << 16) | static_cast<uint32_t>(in_window);
  if (req.remote_offset + req.length > grant.length) {
    return Fail(Status::Malformed("chunk " + std::to_string(slot.chunk) + " does not fit window " +
                                  std::to_string(slot.window)));
  }
  auto posted = node_->PostWrite(req);
  if (!posted.ok()) return Fail(posted.status().Annotate("chunk " + std::to_string(slot.chunk)));
  slot.busy = true;
  slot.request_id = req.request_id;
  ++slot.attempt;
  return Status::Ok();
}

Status SendSession::PollCompletions() {
  records_.clear();
  auto polled = node_->Poll(records_, 64);
  if (!polled.ok()) return Fail(polled.status());
  for (const auto& record : records_) {
    auto slot_it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) {
      return s.busy && s.request_id == record.request_id();
    });
    WorkCompletionRecord wc;
    wc.request_id = record.request_id();
    wc.ok = record.ok();
    wc.status = record.status().Name();
    wc.endpoint = record.endpoint();
    if (auto prov = record.provider_error(); prov.ok()) {
      wc.provider_errno = prov->prov_errno;
      wc.provider_error = prov->text;
    }
    if (slot_it == slots_.end()) {
      wc.chunk = UINT64_MAX;  // not one of ours: kept as evidence, never counted
      out_.work_completions.push_back(std::move(wc));
      continue;
    }
    Slot& slot = *slot_it;
    wc.chunk = slot.chunk;
    wc.attempt = slot.attempt;
    out_.work_completions.push_back(wc);
    last_progress_ = Clock::now();
    out_.portion_request_ids[slot.chunk] = slot.request_id;
    slot.busy = false;
    if (record.ok()) {
      ++chunks_done_;
      bytes_done_ += slot.length;
      if (opt_.progress) opt_.progress(bytes_done_, out_.delivery.bytes);
      continue;
    }
    // The receiver refuses (full disk, failed validation) before it revokes the delivery's
    // windows, so a write failing on a revoked window usually has its reason waiting on the
    // control connection: read it before retrying or reporting a transport failure. The
    // error record stays in the evidence either way.
    WRIT_RETURN_IF_ERROR(ReadControl(slot.attempt < opt_.max_attempts ? 0ms : kRefusalGrace));
    if (slot.attempt < opt_.max_attempts) {
      WRIT_RETURN_IF_ERROR(Post(slot, static_cast<size_t>(&slot - slots_.data())));
      continue;
    }
    return Fail(Status::Transport("chunk " + std::to_string(slot.chunk) + " failed: " + wc.status +
                                  " (" + wc.provider_error + ") after " +
                                  std::to_string(slot.attempt) + " attempt(s)"));
  }
  return Status::Ok();
}

void SendSession::AddReceipt(Receipt receipt) {
  if (receipt.rung == ReceiptRung::kRetained && receipt.retention) {
    auto cls = protocol::ParseRetention(receipt.retention->retention);
    if (cls.ok() && (!out_.reached_retention || *cls > *out_.reached_retention)) {
      out_.reached_retention = *cls;
    }
  } else if (!out_.reached_rung || RungOrder(receipt.rung) > RungOrder(*out_.reached_rung)) {
    out_.reached_rung = receipt.rung;
  }
  out_.receipts.push_back(std::move(receipt));
}

bool SendSession::Done() const {
  const bool writes_idle =
      std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; });
  if (!writes_idle) return false;
  const int wanted = static_cast<int>(opt_.until);  // Rung values order like RungOrder
  if (!out_.reached_rung || RungOrder(*out_.reached_rung) < wanted) return false;
  const bool await_retention = opt_.retention.has_value() || opt_.until >= Rung::kValidated;
  if (!await_retention) return true;
  const RetentionClass want = opt_.retention.value_or(RetentionClass::kVolatile);
  return out_.reached_retention && *out_.reached_retention >= want;
}

std::string SendSession::LastRung() const {
  std::string last = out_.reached_rung ? std::string(ReceiptRungName(*out_.reached_rung)) : "none";
  if (out_.reached_retention) {
    last += ", retained " + std::string(protocol::RetentionName(*out_.reached_retention));
  }
  return last;
}

}  // namespace

DeliveryOutcome Send(const std::string& path, const SendOptions& options) {
  DeliveryOutcome outcome;
  SendSession session(options, outcome);
  outcome.status = session.Run(path);
  return outcome;
}

}  // namespace writ
