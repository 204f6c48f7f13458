// A connection's timeouts (ReceiverOptions): the handshake and idle ones while it carries no
// run, and each run's own (InboundRun::CheckTimeouts) while it does.
#include <algorithm>

#include "receiver/connection.h"

namespace writ::receiver {

using protocol::RefuseReason;

Connection::Clock::time_point Connection::NextDeadline() const {
  const ReceiverOptions& opt = core_.options;
  if (runs_.empty()) {
    return last_message_ ? *last_message_ + opt.idle_timeout : started_ + opt.handshake_timeout;
  }
  auto next = Clock::time_point::max();
  for (const auto& entry : runs_) next = std::min(next, entry.second->Deadline());
  return next;
}

Status Connection::CheckTimeouts(bool& close) {
  const ReceiverOptions& opt = core_.options;
  const auto now = Clock::now();
  // Slots whose write or deliver never came are cleared and given back.
  if (ring_) ring_->Expire(now, opt.grant_unused_timeout);
  if (!runs_.empty()) {
    for (auto it = runs_.begin(); it != runs_.end();) {
      InboundRun& run = *(it++)->second;  // Settle erases only `run`
      WRIT_RETURN_IF_ERROR(Settle(run, run.CheckTimeouts(now)));
    }
    return Status::Ok();
  }
  const auto ms = [](std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; };
  std::string why;
  if (!last_message_ && now - started_ >= opt.handshake_timeout) {
    why = "no announce or query within the handshake timeout of " + ms(opt.handshake_timeout);
  } else if (last_message_ && now - *last_message_ >= opt.idle_timeout) {
    why = "idle (no delivery in progress, no message) for the idle timeout of " +
          ms(opt.idle_timeout);
  }
  if (why.empty()) return Status::Ok();
  close = true;
  Tell("connection from " + channel_.peer() + " closed: " + why);
  return Refuse("", RefuseReason::kLimit, "connection closed: " + why);
}

}  // namespace writ::receiver
