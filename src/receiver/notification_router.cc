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
  // One wake-up per sleep: the first push after Sleep takes the flag, later ones find it
  // cleared and the thread already woken.
  if (sleeping_.exchange(false)) Wake();
}

bool Inbox::Sleep() {
  sleeping_.store(true);
  MutexLock lock(mu_);
  if (values_.empty()) return true;
  sleeping_.store(false);  // a push that took the flag meanwhile raised the eventfd: harmless
  return false;
}

bool Inbox::HasValues() const {
  MutexLock lock(mu_);
  return !values_.empty();
}

void Inbox::Wake() {
  const uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
}

void Inbox::Drain(std::vector<uint32_t>& out, bool signaled) {
  if (signaled) {
    uint64_t counter = 0;
    (void)!read(event_fd_, &counter, sizeof counter);
  }
  MutexLock lock(mu_);
  out.insert(out.end(), values_.begin(), values_.end());
  values_.clear();
}

NotificationRouter::NotificationRouter() : by_tag_(65536), draw_(std::random_device{}()) {
  for (uint32_t tag = 65535; tag >= 1; --tag) free_.push_back(static_cast<uint16_t>(tag));
}

std::optional<uint16_t> NotificationRouter::Bind(std::shared_ptr<Inbox> inbox,
                                                 const fabric::Peer& writer) {
  MutexLock lock(mu_);
  if (free_.empty()) return std::nullopt;
  // At random among the half of the free tags freed longest ago: unguessable, and a late
  // notification for a revoked window is still unlikely to hit a new one.
  const size_t from_back = std::uniform_int_distribution<size_t>(0, (free_.size() - 1) / 2)(draw_);
  std::swap(free_[free_.size() - 1 - from_back], free_.back());
  const uint16_t tag = free_.back();
  free_.pop_back();
  by_tag_[tag] = Binding{std::move(inbox), writer};
  return tag;
}

void NotificationRouter::Unbind(uint16_t tag) {
  MutexLock lock(mu_);
  if (tag == 0 || !by_tag_[tag].inbox) return;
  by_tag_[tag] = Binding{};
  free_.push_front(tag);
}

void NotificationRouter::Route(const fabric::Peer& writer, uint32_t value) {
  std::shared_ptr<Inbox> inbox;
  bool forged = false;
  {
    MutexLock lock(mu_);
    const Binding& binding = by_tag_[value >> 16];
    // An address of FI_ADDR_UNSPEC: the provider names no writer beyond its endpoint. Where
    // it names every writer, the same value (FI_ADDR_NOTAVAIL) is a writer it does not know.
    const bool unnamed = writer.address == FI_ADDR_UNSPEC;
    forged = binding.inbox && (binding.writer.endpoint != writer.endpoint ||
                               (unnamed && writers_named_.load(std::memory_order_relaxed)) ||
                               (!unnamed && binding.writer.address != writer.address));
    if (!forged) inbox = binding.inbox;
  }
  if (inbox) {
    inbox->Push(value);
  } else if (forged) {
    forged_.fetch_add(1);
  } else {
    unrouted_.fetch_add(1);
  }
}

}  // namespace writ::receiver
