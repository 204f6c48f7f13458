#include "receiver/exposed_targets.h"

#include <vector>

namespace writ::receiver {

TargetClaim::~TargetClaim() { targets_->Release(serial_); }

void TargetClaim::Report(const std::string& delivery_id, bool ok, const std::string& why) const {
  if (!target_->options.on_delivery) return;
  target_->options.on_delivery(
      TargetDelivery{target_->name, delivery_id, offset_, bytes_, ok, ok ? std::string() : why});
}

Status ExposedTargets::Expose(const std::string& name, std::span<uint8_t> buffer,
                              ExposeOptions options) {
  if (name.empty()) return Status::InvalidArgument("expose: the target's name is empty");
  for (char c : name) {
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument("expose: target name '" + name +
                                     "' is not printable ASCII without spaces");
    }
  }
  if (buffer.empty()) return Status::InvalidArgument("expose: target " + name + " is empty");
  if (options.pages) {
    const PageGeometry& g = *options.pages;
    if (g.page_size == 0 || g.page_count == 0 || g.page_count > buffer.size() / g.page_size) {
      return Status::InvalidArgument("expose: target " + name + ": " +
                                     std::to_string(g.page_count) + " pages of " +
                                     std::to_string(g.page_size) + " bytes do not fit its " +
                                     std::to_string(buffer.size()) + "-byte buffer");
    }
  }
  auto target = std::make_shared<ExposedTarget>();
  target->name = name;
  target->buffer = buffer;
  target->options = std::move(options);
  MutexLock lock(mu_);
  if (!targets_.emplace(name, std::move(target)).second) {
    return Status::InvalidArgument("expose: target " + name + " is exposed already");
  }
  return Status::Ok();
}

Status ExposedTargets::Revoke(const std::string& name) {
  MutexLock lock(mu_);
  auto it = targets_.find(name);
  if (it == targets_.end()) return Status::NotFound("revoke: no target " + name + " is exposed");
  const std::shared_ptr<ExposedTarget> target = it->second;
  targets_.erase(it);
  target->revoked.store(true);
  // Each connection holding a range refuses its delivery on its next turn.
  for (const auto& [serial, held] : held_) {
    if (held.target == target && held.inbox) held.inbox->Wake();
  }
  lock.Wait(released_, [&]() REQUIRES(mu_) {
    for (const auto& [serial, held] : held_) {
      if (held.target == target) return false;
    }
    return true;
  });
  return Status::Ok();
}

Result<std::unique_ptr<TargetClaim>> ExposedTargets::Claim(const std::string& name,
                                                           const std::string& id, uint64_t offset,
                                                           uint64_t bytes,
                                                           std::shared_ptr<Inbox> inbox) {
  MutexLock lock(mu_);
  auto it = targets_.find(name);
  if (it == targets_.end()) {
    return Status::NotFound("no target " + name + " is exposed by this receiver");
  }
  const std::shared_ptr<ExposedTarget>& target = it->second;
  const uint64_t size = target->buffer.size();
  if (offset > size || bytes > size - offset) {
    return Status::InvalidArgument("bytes [" + std::to_string(offset) + ", " +
                                   std::to_string(offset + bytes) + ") lie outside target " + name +
                                   " (" + std::to_string(size) + " bytes)");
  }
  for (const auto& [serial, held] : held_) {
    if (held.target != target || offset >= held.offset + held.bytes ||
        held.offset >= offset + bytes) {
      continue;
    }
    return Status::Refused(
        "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
        ") of target " + name + " overlap delivery " + held.id + ", in flight into [" +
        std::to_string(held.offset) + ", " + std::to_string(held.offset + held.bytes) + ")");
  }
  const uint64_t serial = next_serial_++;
  held_.emplace(serial, Held{target, id, offset, bytes, std::move(inbox)});
  return std::make_unique<TargetClaim>(*this, serial, target, offset, bytes);
}

size_t ExposedTargets::claims() const {
  MutexLock lock(mu_);
  return held_.size();
}

void ExposedTargets::Release(uint64_t serial) {
  MutexLock lock(mu_);
  held_.erase(serial);
  released_.notify_all();
}

}  // namespace writ::receiver
