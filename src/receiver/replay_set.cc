#include "receiver/replay_set.h"

namespace writ::receiver {
namespace {

// Floor division: the second holding `ms`, also before the epoch.
int64_t SecondOf(int64_t ms) { return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000); }

}  // namespace

void ReplaySet::Forget(int64_t now_ms) {
  // A second's nonces are all stale once now is past its last millisecond.
  while (!by_second_.empty() && (by_second_.begin()->first + 1) * 1000 <= now_ms) {
    for (const std::string& nonce : by_second_.begin()->second) {
      ++examined_;
      nonces_.erase(nonce);
    }
    by_second_.erase(by_second_.begin());
  }
}

bool ReplaySet::Insert(const std::string& nonce, int64_t stale_after_ms, int64_t now_ms) {
  Forget(now_ms);
  if (!nonces_.insert(nonce).second) return false;
  by_second_[SecondOf(stale_after_ms)].push_back(nonce);
  return true;
}

}  // namespace writ::receiver
