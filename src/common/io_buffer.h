// A page-aligned, uninitialised byte buffer for read/pread/pwrite.
//
// Why aligned: the kernel's copy into a user buffer (`rep movsb` on this AMD CPU) runs at
// 1.5 GB/s into a malloc'd block, which sits 16 bytes past a page boundary, and at
// 7 GB/s into a page-aligned one (1 GiB pread in 256 KiB blocks: 0.58 s against
// 0.14 s; docs/benchmarks.md). Uninitialised: zeroing a large block per small delivery
// once cost more than the delivery.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

namespace writ {

class IoBuffer {
 public:
  IoBuffer() = default;
  // size 0 gives an empty buffer; allocation failure aborts, as operator new would.
  explicit IoBuffer(size_t size) : size_(size) {
    if (size == 0) return;
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t rounded = (size + page - 1) / page * page;
    void* p = std::aligned_alloc(page, rounded);
    if (p == nullptr) std::abort();
    bytes_.reset(static_cast<uint8_t*>(p));
  }

  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {bytes_.get(), size_}; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> bytes_;
  size_t size_ = 0;
};

}  // namespace writ
