// The nonces of admitted announces, remembered while a replay of their announce could
// still be fresh. Each nonce is filed under the second its announce goes stale; an
// insert forgets the seconds that have passed, so each nonce is looked at once more,
// when it is forgotten: O(1) amortised per announce, memory bounded by the announces
// of one freshness window (plus one second).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace writ::receiver {

class ReplaySet {
 public:
  // False when `nonce` is remembered (a replay). Otherwise remembers it until
  // `stale_after_ms` has passed, after forgetting every nonce stale at `now_ms`.
  bool Insert(const std::string& nonce, int64_t stale_after_ms, int64_t now_ms);

  size_t size() const { return nonces_.size(); }
  // Remembered nonces looked at while forgetting, since construction.
  uint64_t examined() const { return examined_; }

 private:
  void Forget(int64_t now_ms);

  std::unordered_set<std::string> nonces_;
  // Second in which the nonces go stale -> those nonces. At most window + 1 s of
  // seconds are ever filed (an announce is fresh at most one window past now).
  std::map<int64_t, std::vector<std::string>> by_second_;
  uint64_t examined_ = 0;
};

}  // namespace writ::receiver
