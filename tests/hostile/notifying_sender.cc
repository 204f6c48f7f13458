#include "notifying_sender.h"

#include <vector>

#include "fabric/work_completion.h"

namespace writ::testing {

using namespace std::chrono_literals;

Result<std::unique_ptr<NotifyingSender>> NotifyingSender::Connect(const std::string& to,
                                                                  const std::string& provider) {
  SessionOptions options;
  options.to = to;
  options.provider = provider;
  options.depth = 1;
  auto link = sender::Link::Open(options);
  if (!link.ok()) return link.status();
  WRIT_RETURN_IF_ERROR((*link)->EnsureStaging(4096));
  auto sender = std::make_unique<NotifyingSender>();
  sender->link_ = std::move(link).value();
  return sender;
}

Status NotifyingSender::NotifyWindow(const protocol::Grant& grant, uint64_t chunk_size) {
  fabric::FabricPort& node = link_->node();
  for (uint32_t c = 0; c < grant.chunk_count; ++c) {
    fabric::WriteRequest write;
    write.request_id = link_->NextRequestId();
    write.peer = link_->peer();
    write.local = &link_->staging_region();
    write.length = 0;  // the notification, without a byte
    write.remote = fabric::RegionDescriptor{grant.remote_address, grant.key, grant.length};
    write.remote_offset = uint64_t{c} * chunk_size;
    write.remote_data = (grant.window_id << 16) | c;
    WRIT_RETURN_IF_ERROR(node.PostWrite(write).status());
    std::vector<fabric::WorkCompletion> records;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (records.empty() && std::chrono::steady_clock::now() < deadline) {
      WRIT_RETURN_IF_ERROR(node.Poll(records).status());
    }
    if (records.empty()) return Status::Timeout("no completion for a zero-byte write");
    if (!records.front().ok()) {
      return Status::Transport("zero-byte write failed: " + records.front().status().Name());
    }
  }
  // Where notifications name no writer, a sender attests its own writes; a hostile one
  // attests these zero-byte ones for its own delivery, as it may.
  if (!node.provider().writes_need_attestation()) return Status::Ok();
  std::vector<uint32_t> chunks(grant.chunk_count);
  for (uint32_t c = 0; c < grant.chunk_count; ++c) chunks[c] = c;
  return link_->channel().Send(protocol::Written{grant.delivery_id, grant.window_id, chunks});
}

HostileOutcome NotifyingSender::Run(protocol::Announce announce,
                                    std::chrono::milliseconds timeout) {
  HostileOutcome out;
  announce.sender_fabric_address = link_->local_address();
  const uint64_t chunks = (announce.bytes + announce.chunk_size - 1) / announce.chunk_size;
  if (!link_->channel().Send(announce).ok()) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool committed = false;
  while (std::chrono::steady_clock::now() < deadline) {
    auto message = link_->channel().Receive(100ms);
    if (!message.ok()) {
      if (message.status().code() == ErrorCode::kTimeout) continue;
      break;  // the receiver closed the connection
    }
    if (const auto* grant = std::get_if<protocol::Grant>(&*message)) {
      ++out.grants;
      if (!NotifyWindow(*grant, announce.chunk_size).ok()) break;
      out.notifications += grant->chunk_count;
    } else if (const auto receipts = protocol::ReceiptsOf(*message); !receipts.empty()) {
      bool retained = false;
      out.receipts_per_message.push_back(receipts.size());
      for (const protocol::Receipt* receipt : receipts) {
        auto parsed = ReceiptFromJson(receipt->json);
        out.rungs.push_back(parsed.ok() ? std::string(ReceiptRungName(parsed->rung)) : "?");
        retained = retained || (parsed.ok() && parsed->rung == ReceiptRung::kRetained);
      }
      if (retained) return out;
    } else if (const auto* refuse = std::get_if<protocol::Refuse>(&*message)) {
      out.refusals.push_back(*refuse);
      return out;
    }
    if (!committed && out.notifications == chunks) {
      committed =
          link_->channel().Send(protocol::Commit{announce.delivery_id, announce.digest, {}}).ok();
    }
  }
  out.timed_out = true;
  return out;
}

}  // namespace writ::testing
