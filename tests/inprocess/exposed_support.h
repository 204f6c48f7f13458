// What the exposed-target tests share (exposed_target_test.cc, exposed_pages_test.cc): the
// application's callback as a record, and the checks on what a raw peer saw.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "memory_rig.h"
#include "protocol/messages.h"
#include "vocabulary/digest.h"
#include "writ/receiver.h"

namespace writ::inprocess {

using namespace std::chrono_literals;

inline constexpr auto kExposedWatch = 5000ms;  // a bound for waits that end much sooner
inline constexpr uint64_t kExposedChunk = 64 << 10;

// What the application's callback heard, in order.
struct Heard {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<TargetDelivery> told;
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return told.size();
  }
  // The callback runs once the run has released its windows, after the sender was told:
  // waits up to 5 s for the n-th.
  size_t AwaitCount(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait_for(lock, 5s, [&] { return told.size() >= n; });
    return told.size();
  }
  TargetDelivery at(size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    return told.at(i);
  }
};

inline ExposeOptions Listening(Heard& heard) {
  ExposeOptions options;
  options.on_delivery = [&heard](const TargetDelivery& d) {
    std::lock_guard<std::mutex> lock(heard.mu);
    heard.told.push_back(d);
    heard.changed.notify_all();
  };
  return options;
}

inline DeliveryOptions Into(const std::string& id, const std::string& target, uint64_t offset) {
  DeliveryOptions options;
  options.id = id;
  options.chunk_size = kExposedChunk;
  options.until = Rung::kValidated;
  options.retention = RetentionClass::kVolatile;
  options.target = target;
  options.target_offset = offset;
  return options;
}

inline std::string ExposedReason(const PeerSaw& saw) {
  return saw.refusal ? std::string(protocol::RefuseReasonName(saw.refusal->reason)) : "none";
}

// Refused with reason `target`, its detail containing `words`.
inline void ExpectTargetRefusal(const PeerSaw& saw, const std::string& words) {
  EXPECT_EQ(ExposedReason(saw), "target");
  ASSERT_TRUE(saw.refusal.has_value());
  EXPECT_NE(saw.refusal->detail.find(words), std::string::npos) << saw.refusal->detail;
}

inline std::vector<uint8_t> DigestOf(std::span<const uint8_t> bytes) {
  auto digester = vocabulary::Digester::Create(Rule::kXxh3_128);
  digester.value()->Update(bytes);
  return digester.value()->Finish();
}

inline bool AllZero(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace writ::inprocess
