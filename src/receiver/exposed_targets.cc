#include "receiver/exposed_targets.h"

#include <algorithm>
#include <iterator>
#include <vector>

namespace writ::receiver {

TargetClaim::TargetClaim(ExposedTargets& targets, uint64_t serial,
                         std::shared_ptr<ExposedTarget> target, TargetRequest request)
    : targets_(&targets),
      serial_(serial),
      target_(std::move(target)),
      request_(std::move(request)) {
  if (!request_.pages.empty()) page_size_ = target_->options.pages->page_size;
}

TargetClaim::~TargetClaim() { targets_->Release(serial_); }

uint8_t* TargetClaim::At(uint64_t delivery_offset) const {
  if (request_.pages.empty()) return target_->buffer.data() + request_.offset + delivery_offset;
  const uint64_t page = request_.pages[delivery_offset / page_size_];
  return target_->buffer.data() + page * page_size_ + delivery_offset % page_size_;
}

uint64_t TargetClaim::ContiguousFrom(uint64_t delivery_offset, uint64_t cap) const {
  if (delivery_offset >= request_.bytes) return 0;
  const uint64_t rest = request_.bytes - delivery_offset;
  if (request_.pages.empty()) return std::min(rest, cap);
  size_t i = delivery_offset / page_size_;
  uint64_t run = page_size_ - delivery_offset % page_size_;
  while (run < cap && i + 1 < request_.pages.size() &&
         request_.pages[i + 1] == request_.pages[i] + 1) {
    run += page_size_;
    ++i;
  }
  return std::min({run, rest, cap});
}

std::string TargetClaim::Where() const {
  if (request_.pages.empty()) {
    return "bytes [" + std::to_string(request_.offset) + ", " +
           std::to_string(request_.offset + request_.bytes) + ")";
  }
  return (request_.pages.size() == 1 ? "page " : "pages ") + PageRuns(request_.pages) + " of " +
         std::to_string(page_size_) + " bytes";
}

void TargetClaim::Report(const std::string& delivery_id, bool ok, const std::string& why) const {
  if (!target_->options.on_delivery) return;
  target_->options.on_delivery(TargetDelivery{target_->name, delivery_id, request_.offset,
                                              request_.bytes, ok, ok ? std::string() : why,
                                              request_.pages});
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
                                                           const std::string& id,
                                                           TargetRequest request,
                                                           std::shared_ptr<Inbox> inbox) {
  MutexLock lock(mu_);
  auto it = targets_.find(name);
  if (it == targets_.end()) {
    return Status::NotFound("no target " + name + " is exposed by this receiver");
  }
  const std::shared_ptr<ExposedTarget>& target = it->second;
  WRIT_ASSIGN_OR_RETURN(std::vector<TargetExtent> extents,
                        ExtentsOf(name, target->buffer.size(), target->options.pages, request));
  if (auto busy = held_bytes_.find(target.get()); busy != held_bytes_.end()) {
    for (const TargetExtent& extent : extents) {
      WRIT_RETURN_IF_ERROR(CheckFree(name, busy->second, extent));
    }
  }
  HeldMap& held = held_bytes_[target.get()];
  const uint64_t serial = next_serial_++;
  for (const TargetExtent& extent : extents)
    held.emplace(extent.start, HeldBytes{extent.end, serial});
  held_.emplace(serial, Held{target, id, std::move(extents), std::move(inbox)});
  return std::make_unique<TargetClaim>(*this, serial, target, std::move(request));
}

Status ExposedTargets::CheckFree(const std::string& name, const HeldMap& held,
                                 const TargetExtent& extent) const {
  // The one held extent starting before `extent` ends and nearest to it is the only one
  // that can overlap: held extents never overlap each other.
  auto next = held.lower_bound(extent.end);
  if (next == held.begin()) return Status::Ok();
  const auto& [start, bytes] = *std::prev(next);
  if (bytes.end <= extent.start) return Status::Ok();
  const std::string what =
      extent.page ? "page " + std::to_string(*extent.page) + " (bytes [" : "bytes [";
  return Status::Refused(what + std::to_string(extent.start) + ", " + std::to_string(extent.end) +
                         (extent.page ? "))" : ")") + " of target " + name + " overlap delivery " +
                         held_.at(bytes.serial).id + ", in flight into [" + std::to_string(start) +
                         ", " + std::to_string(bytes.end) + ")");
}

size_t ExposedTargets::claims() const {
  MutexLock lock(mu_);
  return held_.size();
}

void ExposedTargets::Release(uint64_t serial) {
  MutexLock lock(mu_);
  auto it = held_.find(serial);
  if (it == held_.end()) return;
  auto bytes = held_bytes_.find(it->second.target.get());
  if (bytes != held_bytes_.end()) {
    for (const TargetExtent& extent : it->second.extents) bytes->second.erase(extent.start);
    if (bytes->second.empty()) held_bytes_.erase(bytes);
  }
  held_.erase(it);
  released_.notify_all();
}

}  // namespace writ::receiver
