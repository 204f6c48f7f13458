// An eventfd owned by one object: a poll()able flag another thread can raise.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "writ/status.h"

namespace writ::fabric {

class EventFd {
 public:
  static Result<EventFd> Create() {
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return Status::Io("eventfd", errno);
    return EventFd(fd);
  }
  EventFd() = default;
  EventFd(EventFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  EventFd& operator=(EventFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~EventFd() { Reset(); }

  int fd() const { return fd_; }
  // Never blocks: the counter saturates long before 2^64 - 2 raises.
  void Signal() const {
    const uint64_t one = 1;
    if (fd_ >= 0) (void)!write(fd_, &one, sizeof one);
  }
  void Drain() const {
    uint64_t count = 0;
    if (fd_ >= 0) (void)!read(fd_, &count, sizeof count);
  }

 private:
  explicit EventFd(int fd) : fd_(fd) {}
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

}  // namespace writ::fabric
