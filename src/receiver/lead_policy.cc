#include "receiver/lead_policy.h"

namespace writ::receiver {

void LeadPolicy::AfterWait(bool leading, bool work_was_waiting, std::chrono::nanoseconds waited) {
  if (saturated_) {
    if (waited >= kIdleAtLeast) {
      saturated_ = false;
      busy_waits_ = 0;
    }
    return;
  }
  busy_waits_ = leading && work_was_waiting ? busy_waits_ + 1 : 0;
  saturated_ = busy_waits_ >= kBusyWaitsToFollow;
}

}  // namespace writ::receiver
