#include "receiver/window_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace writ::receiver {

Result<std::unique_ptr<WindowPool>> WindowPool::Create(uint64_t pool_bytes, uint64_t window_bytes) {
  if (window_bytes == 0 || window_bytes % 4096 != 0) {
    return Status::InvalidArgument("window size must be a positive multiple of 4096 bytes");
  }
  if (pool_bytes < window_bytes) {
    return Status::InvalidArgument("window pool (" + std::to_string(pool_bytes) +
                                   " bytes) is smaller than one window (" +
                                   std::to_string(window_bytes) + " bytes)");
  }
  const size_t total = pool_bytes / window_bytes;
  const uint64_t mapped = total * window_bytes;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return Status::Io(std::string("window pool: mmap failed: ") + std::strerror(errno), errno);
  }
  // Huge pages where the kernel allows them (THP "madvise"): an O_DIRECT write from a
  // window (the durable store) pins 2 MiB pages rather than 4 KiB ones, on every delivery;
  // the price is paid once per serve, at a page's first use. Advice only: without THP
  // nothing changes.
  (void)madvise(base, mapped, MADV_HUGEPAGE);
  return std::unique_ptr<WindowPool>(
      new WindowPool(static_cast<uint8_t*>(base), mapped, window_bytes, total));
}

WindowPool::WindowPool(uint8_t* base, uint64_t mapped, uint64_t window_bytes, size_t total)
    : base_(base), mapped_(mapped), window_bytes_(window_bytes), total_(total), slots_(total) {
  for (size_t i = total; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
}

WindowPool::~WindowPool() { munmap(base_, mapped_); }

std::optional<WindowPool::Window> WindowPool::TryAcquire(int waiter_eventfd, bool holds_windows,
                                                         uint64_t owner) {
  uint32_t index = 0;
  uint64_t clear = 0;
  {
    MutexLock lock(mu_);
    const bool yields = holds_windows &&
                        std::any_of(waiters_.begin(), waiters_.end(),
                                    [&](auto& w) { return w.first != waiter_eventfd && w.second; });
    if (free_.empty() || yields) {
      waiters_[waiter_eventfd] = !holds_windows;
      return std::nullopt;
    }
    waiters_.erase(waiter_eventfd);
    index = free_.back();
    free_.pop_back();
    Slot& slot = slots_[index];
    if (owner == 0 || slot.owner != owner) {
      clear = slot.dirty;
      slot.dirty = 0;
    }
    slot.owner = owner;
  }
  std::memset(data(index), 0, clear);  // outside the lock: the window is ours now
  return Window{index, data(index)};
}

void WindowPool::Release(uint32_t index, uint64_t exposed_bytes) {
  std::vector<int> wake;
  {
    MutexLock lock(mu_);
    Slot& slot = slots_[index];
    slot.dirty = std::max(slot.dirty, std::min(exposed_bytes, window_bytes_));
    free_.push_back(index);
    for (const auto& [fd, starving] : waiters_) wake.push_back(fd);
  }
  const uint64_t one = 1;
  for (int fd : wake) (void)!write(fd, &one, sizeof one);
}

void WindowPool::ForgetWaiter(int waiter_eventfd) {
  MutexLock lock(mu_);
  waiters_.erase(waiter_eventfd);
}

uint32_t WindowPool::in_use() const {
  MutexLock lock(mu_);
  return static_cast<uint32_t>(total_ - free_.size());
}

}  // namespace writ::receiver
