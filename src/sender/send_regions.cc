// writ::SendRegions: a scatter-gather delivery on a session of its own.
#include "writ/sender.h"

namespace writ {

DeliveryOutcome SendRegions(std::span<const Region> regions, const SendOptions& options) {
  DeliveryOutcome out;
  if (options.id.empty()) {
    out.status = Status::InvalidArgument("SendRegions needs a delivery id");
    return out;
  }
  if (options.depth == 0) {
    out.status = Status::InvalidArgument("depth must be at least 1");
    return out;
  }
  auto session = Sender::Connect(SessionOptionsOf(options));
  if (!session.ok()) {
    out.status = session.status();
    return out;
  }
  return (*session)->SendRegions(regions, DeliveryOptionsOf(options));
}

}  // namespace writ
