// The bytes of one delivery: a file, or standard input spooled to an unlinked
// temporary file first (the digest must be announced before the first write).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"
#include "writ/types.h"

namespace writ::sender {

class DeliverySource {
 public:
  // "-" reads standard input.
  static Result<DeliverySource> Open(const std::string& path);
  DeliverySource(DeliverySource&& other) noexcept;
  DeliverySource& operator=(DeliverySource&&) = delete;
  ~DeliverySource();

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // One pass over the bytes, in bounded memory.
  Result<std::vector<uint8_t>> Digest(Rule rule) const;
  Status Read(uint64_t offset, std::span<uint8_t> out) const;

 private:
  DeliverySource(int fd, uint64_t size, std::string name) : fd_(fd), size_(size), name_(std::move(name)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;
};

}  // namespace writ::sender
