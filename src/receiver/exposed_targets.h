// Memory the receiver's application exposed under a name (Receiver::Expose), and which
// deliveries in flight hold which range of it (docs/architecture.md, "Exposed targets").
// A delivery's TargetClaim is taken at admission and given back when its run ends; Revoke
// withdraws the name, wakes the connections of the deliveries still holding a range (they
// refuse them) and returns once every claim is given back, so no window into the buffer is
// registered any more.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/mutex.h"
#include "receiver/notification_router.h"
#include "writ/receiver.h"

namespace writ::receiver {

struct ExposedTarget {
  std::string name;
  std::span<uint8_t> buffer;
  ExposeOptions options;
  std::atomic<bool> revoked{false};
};

class ExposedTargets;

// One delivery's range of a target, held from its admission to the end of its run.
class TargetClaim {
 public:
  TargetClaim(ExposedTargets& targets, uint64_t serial, std::shared_ptr<ExposedTarget> target,
              uint64_t offset, uint64_t bytes)
      : targets_(&targets),
        serial_(serial),
        target_(std::move(target)),
        offset_(offset),
        bytes_(bytes) {}
  TargetClaim(const TargetClaim&) = delete;
  TargetClaim& operator=(const TargetClaim&) = delete;
  ~TargetClaim();

  const std::string& target() const { return target_->name; }
  uint64_t offset() const { return offset_; }
  uint64_t bytes() const { return bytes_; }
  // The application's memory at `delivery_offset` into this delivery.
  uint8_t* At(uint64_t delivery_offset) const {
    return target_->buffer.data() + offset_ + delivery_offset;
  }
  bool revoked() const { return target_->revoked.load(); }
  // Tells the application how the delivery ended (ExposeOptions::on_delivery).
  void Report(const std::string& delivery_id, bool ok, const std::string& why) const;

 private:
  ExposedTargets* targets_;
  uint64_t serial_;
  std::shared_ptr<ExposedTarget> target_;
  uint64_t offset_;
  uint64_t bytes_;
};

class ExposedTargets {
 public:
  Status Expose(const std::string& name, std::span<uint8_t> buffer, ExposeOptions options);
  // Returns once no delivery holds a range of `name` any more.
  Status Revoke(const std::string& name);
  // A range for delivery `id`, or why not (kNotFound: no such target; kInvalidArgument:
  // outside the buffer; kRefused: overlapping a delivery in flight). `inbox` is woken
  // should the target be revoked meanwhile.
  Result<std::unique_ptr<TargetClaim>> Claim(const std::string& name, const std::string& id,
                                             uint64_t offset, uint64_t bytes,
                                             std::shared_ptr<Inbox> inbox);
  size_t claims() const;

 private:
  friend class TargetClaim;
  struct Held {
    std::shared_ptr<ExposedTarget> target;
    std::string id;
    uint64_t offset = 0;
    uint64_t bytes = 0;
    std::shared_ptr<Inbox> inbox;
  };
  void Release(uint64_t serial);

  mutable Mutex mu_;
  std::condition_variable released_;
  std::map<std::string, std::shared_ptr<ExposedTarget>> targets_ GUARDED_BY(mu_);
  std::map<uint64_t, Held> held_ GUARDED_BY(mu_);
  uint64_t next_serial_ GUARDED_BY(mu_) = 1;
};

}  // namespace writ::receiver
