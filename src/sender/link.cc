#include "sender/link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace writ::sender {
namespace {

using namespace std::chrono_literals;

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

}  // namespace

Result<std::unique_ptr<Link>> Link::Open(const SessionOptions& options,
                                         const fabric::FabricOpener& open_fabric) {
  if (options.depth == 0) return Status::InvalidArgument("depth must be at least 1");
  auto host_port = protocol::ParseHostPort(options.to);
  if (!host_port.ok()) return Status::InvalidArgument("--to: " + host_port.status().message());
  std::unique_ptr<Link> link(new Link());
  link->depth_ = options.depth;
  link->issuer_ = "writ-send@pid" + std::to_string(::getpid());
  link->busy_poll_ = options.busy_poll;
  link->ring_enabled_ = options.ring;
  link->write_slots_.assign(options.depth, WriteSlot{});
  // Every receipt read is parsed by ReceiptFromJson (strict) as it is dispatched: the
  // decoder leaves its JSON to that one parse.
  protocol::Limits limits;
  limits.parse_receipt_json = false;
  auto channel = protocol::ControlChannel::Connect(host_port->first, host_port->second,
                                                   options.connect_timeout, limits);
  if (!channel.ok()) {
    return Status::Transport("cannot reach the receiver at " + options.to + ": " +
                             channel.status().message());
  }
  link->channel_.emplace(std::move(channel).value());
  auto first = link->channel_->Receive(options.connect_timeout);
  if (!first.ok()) {
    return Status::Transport("no hello from the receiver: " + first.status().message());
  }
  if (const auto* refuse = std::get_if<protocol::Refuse>(&*first)) {
    return Status::Refused("receiver refused the connection (" +
                           std::string(protocol::RefuseReasonName(refuse->reason)) +
                           "): " + refuse->detail);
  }
  const auto* hello = std::get_if<protocol::Hello>(&*first);
  if (hello == nullptr) return Status::Malformed("the receiver did not start with a hello");
  link->hello_ = *hello;
  WRIT_RETURN_IF_ERROR(link->ConnectFabric(options.provider, host_port->first, open_fabric));
  return link;
}

Status Link::ConnectFabric(const std::string& wanted_provider, const std::string& control_host,
                           const fabric::FabricOpener& open_fabric) {
  if (!wanted_provider.empty() && wanted_provider != hello_.provider) {
    return Status::InvalidArgument("the receiver serves provider '" + hello_.provider + "', not '" +
                                   wanted_provider + "'");
  }
  fabric::NodeOptions node_options;
  node_options.provider.provider = hello_.provider;
  node_options.provider.role = fabric::Role::kInitiator;
  node_options.max_outstanding = depth_;
  if (fabric::EndpointKindFor(hello_.provider) == fabric::EndpointKind::kMsg) {
    WRIT_ASSIGN_OR_RETURN(auto target, MsgTargetAddress(hello_.fabric_address, control_host));
    node_options.provider.node = target.first;
    node_options.provider.service = target.second;
    WRIT_ASSIGN_OR_RETURN(node_, open_fabric(node_options));
    WRIT_ASSIGN_OR_RETURN(peer_, node_->Connect(10s));
    WRIT_ASSIGN_OR_RETURN(local_address_, node_->LocalAddress());
  } else {
    if (hello_.provider != "shm") node_options.provider.node = LocalHostOf(channel_->fd());
    WRIT_ASSIGN_OR_RETURN(node_, open_fabric(node_options));
    WRIT_ASSIGN_OR_RETURN(peer_, node_->AddPeer(hello_.fabric_address));
    WRIT_ASSIGN_OR_RETURN(local_address_, node_->LocalAddress());
  }
  return Status::Ok();
}

namespace {

constexpr uint64_t kHugePage = 2ull << 20;

uint64_t RoundUp(uint64_t bytes, uint64_t unit) { return (bytes + unit - 1) / unit * unit; }

uint64_t StagingSlotBytes(uint64_t wanted) {
  return (std::max<uint64_t>(wanted, 4096) + 4095) / 4096 * 4096;
}

}  // namespace

bool Link::WritesIdle() const {
  return std::none_of(write_slots_.begin(), write_slots_.end(),
                      [](const WriteSlot& s) { return s.busy(); });
}

bool Link::StagingFits(uint64_t slot_bytes) const {
  return staging_ != nullptr && StagingSlotBytes(slot_bytes) <= slot_bytes_;
}

Status Link::EnsureStaging(uint64_t slot_bytes) {
  slot_bytes = StagingSlotBytes(slot_bytes);
  if (staging_ != nullptr && slot_bytes <= slot_bytes_) return Status::Ok();
  if (!WritesIdle()) return Status::Internal("staging cannot grow while writes are in flight");
  FreeStaging();
  const uint64_t total = slot_bytes * depth_;
  // Staging of large chunks on transparent huge pages (where the kernel gives them only on
  // request): its first touches fault 2 MiB at a time, not 4 KiB. 32 MiB of staging
  // (4 x 8 MiB) took 8,192 faults and about 0.06 CPU-s of each `writ send` here (page
  // faults are dear on a virtual machine); with the advice, 16. An advice: refused is fine.
  const bool huge = total >= kHugePage;
  const uint64_t allocated = huge ? RoundUp(total, kHugePage) : total;
  staging_ = static_cast<uint8_t*>(std::aligned_alloc(huge ? kHugePage : 4096, allocated));
  if (staging_ == nullptr) return Status::Internal("cannot allocate staging buffers");
  if (huge) (void)madvise(staging_, allocated, MADV_HUGEPAGE);
  auto region = node_->Register(staging_, total, fabric::Access::kLocalSource);
  if (!region.ok()) {
    FreeStaging();
    return region.status().Annotate("registering staging buffers");
  }
  staging_region_ = std::move(region).value();
  slot_bytes_ = slot_bytes;
  return Status::Ok();
}

void Link::FreeStaging() {
  (void)staging_region_.Close();
  std::free(staging_);
  staging_ = nullptr;
  slot_bytes_ = 0;
}

Status Link::Close() {
  ring_.Close();
  Status first = staging_region_.Close();
  if (node_) {
    Status closed = node_->Close();
    if (first.ok()) first = closed;
  }
  if (channel_) channel_->Shutdown();
  return first;
}

Link::~Link() {
  (void)Close();
  std::free(staging_);
}

}  // namespace writ::sender
