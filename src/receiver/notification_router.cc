#include "receiver/notification_router.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace writ::receiver {

Result<std::shared_ptr<Inbox>> Inbox::Create() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::Io("eventfd", errno);
  return std::shared_ptr<Inbox>(new Inbox(fd));
}

Inbox::~Inbox() { close(event_fd_); }

void Inbox::Push(uint32_t value) {
  {
    MutexLock lock(mu_);
    values_.push_back(value);
  }
  Wake();
}

void Inbox::Wake() {
  const uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
}

void Inbox::Drain(std::vector<uint32_t>& out) {
  uint64_t counter = 0;
  (void)!read(event_fd_, &counter, sizeof counter);
  MutexLock lock(mu_);
  out.insert(out.end(), values_.begin(), values_.end());
  values_.clear();
}

NotificationRouter::NotificationRouter() : by_tag_(65536) {
  for (uint32_t tag = 65535; tag >= 1; --tag) free_.push_back(static_cast<uint16_t>(tag));
}

std::optional<uint16_t> NotificationRouter::Bind(std::shared_ptr<Inbox> inbox) {
  MutexLock lock(mu_);
  if (free_.empty()) return std::nullopt;
  const uint16_t tag = free_.back();
  free_.pop_back();
  by_tag_[tag] = std::move(inbox);
  return tag;
}

void NotificationRouter::Unbind(uint16_t tag) {
  MutexLock lock(mu_);
  if (tag == 0 || !by_tag_[tag]) return;
  by_tag_[tag].reset();
  // Reuse the oldest-freed tag last, so a late notification is unlikely to hit a new window.
  free_.push_front(tag);
}

void NotificationRouter::Route(uint32_t value) {
  std::shared_ptr<Inbox> inbox;
  {
    MutexLock lock(mu_);
    inbox = by_tag_[value >> 16];
  }
  if (inbox) {
    inbox->Push(value);
  } else {
    unrouted_.fetch_add(1);
  }
}

}  // namespace writ::receiver
