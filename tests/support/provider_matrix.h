// The providers every provider test runs over, and what each is measured to do
// (docs/architecture.md, "What the providers really do"). Tests take their
// expectations from here instead of copying a body per provider.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace writ::testing {

enum class WrongKeyOutcome {
  kErrorRecord,  // the responder refuses; the initiator gets one error record
  kSilence,      // shm with delivery-complete: no record at all, nothing placed
};

struct ProviderCase {
  std::string name;                    // as given to --provider
  bool needs_rdma_device;              // verbs: runs in the Soft-RoCE guest (CTest label `verbs`)
  bool checks_keys;                    // a wrong key or a write past the window is refused
  std::string delivery_granted;        // the level granted when delivery-complete is asked
  WrongKeyOutcome wrong_key;           // with delivery-complete asked
  std::optional<int> wrong_key_errno;  // the provider error of that record, where fixed
  bool flushes_after_error;            // RC: writes after a failed one are flushed
};

// IBV_WC_REM_ACCESS_ERR, carried as the provider error of a verbs record.
inline constexpr int kIbvRemoteAccessError = 10;

inline const std::vector<ProviderCase>& AllProviders() {
  static const std::vector<ProviderCase> cases = {
      {"tcp", false, true, "delivery", WrongKeyOutcome::kErrorRecord, std::nullopt, false},
      {"tcp;ofi_rxm", false, true, "delivery", WrongKeyOutcome::kErrorRecord, std::nullopt, false},
      {"shm", false, false, "delivery", WrongKeyOutcome::kSilence, std::nullopt, false},
      {"verbs", true, true, "transmit", WrongKeyOutcome::kErrorRecord, kIbvRemoteAccessError, true},
      {"verbs;ofi_rxm", true, true, "transmit", WrongKeyOutcome::kErrorRecord,
       kIbvRemoteAccessError, true},
  };
  return cases;
}

template <typename Pred>
std::vector<ProviderCase> ProvidersWhere(Pred pred) {
  std::vector<ProviderCase> out;
  std::copy_if(AllProviders().begin(), AllProviders().end(), std::back_inserter(out), pred);
  return out;
}

// The providers a `writ serve` on loopback runs over here (verbs runs in the guest).
inline std::vector<std::string> LoopbackProviderNames() {
  std::vector<std::string> out;
  for (const auto& c : AllProviders()) {
    if (!c.needs_rdma_device) out.push_back(c.name);
  }
  return out;
}

inline std::string TestNameOf(std::string provider) {
  std::replace_if(
      provider.begin(), provider.end(), [](char c) { return !std::isalnum(c); }, '_');
  return provider;
}

inline std::string CaseName(const ::testing::TestParamInfo<ProviderCase>& info) {
  return TestNameOf(info.param.name);
}

inline std::string ProviderName(const ::testing::TestParamInfo<std::string>& info) {
  return TestNameOf(info.param);
}

inline void PrintTo(const ProviderCase& c, std::ostream* os) { *os << c.name; }

}  // namespace writ::testing
