// What a connection holds against the receiver's shared accounting (ReceiverCore): a unit of
// a sender's usage, a delivery id in progress. Each is given back when its owner ends.
#pragma once

#include <optional>
#include <string>

namespace writ::receiver {

struct ReceiverCore;

// Per-sender usage counted against the configured limits (ReceiverOptions).
enum class SenderUsage { kDeliveries, kWindows, kConnections };

// One unit of a sender's usage (a connection, a delivery, a window), given back when this
// ends.
class Reservation {
 public:
  // The unit, or nullopt when `sender` already holds its limit of `what`.
  static std::optional<Reservation> Take(ReceiverCore& core, std::string sender, SenderUsage what);
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation();
  const std::string& sender() const { return sender_; }

 private:
  Reservation(ReceiverCore& core, std::string sender, SenderUsage what);
  void GiveBack();

  ReceiverCore* core_;  // null once moved from
  std::string sender_;
  SenderUsage what_;
};

// A delivery id claimed: in progress on one connection of this receiver only, until this
// ends.
class IdClaim {
 public:
  // The claim, or nullopt when `id` is in progress on another connection.
  static std::optional<IdClaim> Take(ReceiverCore& core, std::string id);
  IdClaim(IdClaim&& other) noexcept;
  IdClaim& operator=(IdClaim&&) = delete;
  ~IdClaim();

 private:
  IdClaim(ReceiverCore& core, std::string id);

  ReceiverCore* core_;  // null once moved from
  std::string id_;
};

}  // namespace writ::receiver
