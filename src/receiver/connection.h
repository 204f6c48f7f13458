// One control connection: Hello, then announces, grants, commits, queries.
// Runs on its own thread; the fabric progress thread feeds it notifications.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>

#include "protocol/control_channel.h"
#include "receiver/inbound_delivery.h"
#include "receiver/notification_router.h"
#include "receiver/receiver_core.h"

namespace writ::receiver {

class Connection {
 public:
  Connection(ReceiverCore& core, protocol::ControlChannel channel);
  ~Connection();

  void Run();
  void Shutdown() { channel_.Shutdown(); }
  bool finished() const { return finished_.load(); }

 private:
  Status HandleMessage(const protocol::Message& message);
  Status OnAnnounce(const protocol::Announce& announce);
  Status OnCommit(const protocol::Commit& commit);
  Status OnQuery(const protocol::Query& query);
  Status ApplyNotifications();
  // Grants windows, consumes chunks, and finishes the delivery when it can.
  Status Advance();
  Status GrantWindows();
  Status Finish();
  Status AnswerFromStore(const protocol::Announce& announce);
  Status Send(const protocol::Message& message);
  Status Refuse(const std::string& id, protocol::RefuseReason reason, const std::string& detail);
  // Signs with the receiver's identity; the canonical JSON that is sent and stored.
  Result<std::string> Sign(Receipt receipt) const;
  Status SendReceipt(const Receipt& receipt);
  void Revoke(LiveWindow& window);
  void EndDelivery();

  ReceiverCore& core_;
  protocol::ControlChannel channel_;
  std::shared_ptr<Inbox> inbox_;
  std::unique_ptr<InboundDelivery> delivery_;
  std::vector<std::string> receipts_;  // issued for the current delivery, JSON
  std::vector<uint32_t> notifications_;
  std::atomic<bool> finished_{false};
  bool peer_gone_ = false;
  std::optional<Result<uid_t>> peer_uid_;
  // RDM: the sender's endpoint, in this receiver's address vector while the connection
  // lasts (shm serves at most 256 peers per endpoint: each must be removed again).
  std::optional<fabric::Peer> sender_peer_;  // over a provider that does not check keys
  std::string
      sender_;  // whom the per-sender limits count against  // the sender closed after committing
};

}  // namespace writ::receiver
