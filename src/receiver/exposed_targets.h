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
#include "receiver/target_pages.h"
#include "writ/receiver.h"

namespace writ::receiver {

struct ExposedTarget {
  std::string name;
  std::span<uint8_t> buffer;
  ExposeOptions options;
  std::atomic<bool> revoked{false};
};

class ExposedTargets;

// One delivery's place in a target (a byte range, or a list of pages), held from its
// admission to the end of its run.
class TargetClaim {
 public:
  TargetClaim(ExposedTargets& targets, uint64_t serial, std::shared_ptr<ExposedTarget> target,
              TargetRequest request);
  TargetClaim(const TargetClaim&) = delete;
  TargetClaim& operator=(const TargetClaim&) = delete;
  ~TargetClaim();

  const std::string& target() const { return target_->name; }
  uint64_t offset() const { return request_.offset; }
  uint64_t bytes() const { return request_.bytes; }
  const std::vector<uint64_t>& pages() const { return request_.pages; }
  // The application's memory at `delivery_offset` into this delivery.
  uint8_t* At(uint64_t delivery_offset) const;
  // How many bytes from `delivery_offset` lie contiguously in the buffer, up to `cap`: a
  // page list breaks where the next page is not the one after.
  uint64_t ContiguousFrom(uint64_t delivery_offset, uint64_t cap) const;
  // "bytes [A, B)", or "pages 3-5, 7 of P bytes": where the delivery lands, for receipts.
  std::string Where() const;
  bool revoked() const { return target_->revoked.load(); }
  // Tells the application how the delivery ended (ExposeOptions::on_delivery).
  void Report(const std::string& delivery_id, bool ok, const std::string& why) const;

 private:
  ExposedTargets* targets_;
  uint64_t serial_;
  std::shared_ptr<ExposedTarget> target_;
  TargetRequest request_;
  uint64_t page_size_ = 0;  // for a page list
};

class ExposedTargets {
 public:
  Status Expose(const std::string& name, std::span<uint8_t> buffer, ExposeOptions options);
  // Returns once no delivery holds a range of `name` any more.
  Status Revoke(const std::string& name);
  // A place for delivery `id`, or why not (kNotFound: no such target; kInvalidArgument:
  // what ExtentsOf refuses; kRefused: overlapping a delivery in flight). `inbox` is woken
  // should the target be revoked meanwhile.
  Result<std::unique_ptr<TargetClaim>> Claim(const std::string& name, const std::string& id,
                                             TargetRequest request, std::shared_ptr<Inbox> inbox);
  size_t claims() const;

 private:
  friend class TargetClaim;
  struct Held {
    std::shared_ptr<ExposedTarget> target;
    std::string id;
    std::vector<TargetExtent> extents;
    std::shared_ptr<Inbox> inbox;
  };
  // The bytes of one target held in flight, by start: [start, end) and the holder's serial.
  struct HeldBytes {
    uint64_t end = 0;
    uint64_t serial = 0;
  };
  using HeldMap = std::map<uint64_t, HeldBytes>;
  void Release(uint64_t serial);
  // Why `extent` of `name` is busy (kRefused, naming the delivery in flight), or Ok.
  Status CheckFree(const std::string& name, const HeldMap& held, const TargetExtent& extent) const
      REQUIRES(mu_);

  mutable Mutex mu_;
  std::condition_variable released_;
  std::map<std::string, std::shared_ptr<ExposedTarget>> targets_ GUARDED_BY(mu_);
  std::map<uint64_t, Held> held_ GUARDED_BY(mu_);
  std::map<const ExposedTarget*, HeldMap> held_bytes_ GUARDED_BY(mu_);
  uint64_t next_serial_ GUARDED_BY(mu_) = 1;
};

}  // namespace writ::receiver
