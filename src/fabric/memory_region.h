// A registered memory region and the descriptor a peer needs to write into it.
#pragma once

#include <rdma/fi_domain.h>

#include <cstdint>
#include <memory>
#include <string>

#include "fabric/fid.h"
#include "writ/status.h"

namespace writ::fabric {

// What a target hands an initiator: where to write and with which key. `base` is
// what the initiator passes as remote address for offset 0: the region's virtual
// address when the provider uses FI_MR_VIRT_ADDR, else 0 (offsets).
struct RegionDescriptor {
  uint64_t base = 0;
  uint64_t key = 0;
  uint64_t length = 0;

  std::string Encode() const;  // "base:key:length" in hex, for out-of-band exchange
  static Result<RegionDescriptor> Decode(std::string_view text);
  bool operator==(const RegionDescriptor&) const = default;
};

enum class Access : uint8_t {
  kLocalSource,  // we read from it when writing to a peer
  kRemoteWrite,  // peers write into it
};

// A registration no libfabric domain holds (the in-memory fabric's, memory_fabric.h): its
// destructor revokes it.
class RegionLease {
 public:
  virtual ~RegionLease() = default;
};

class MemoryRegion {
 public:
  MemoryRegion() = default;  // empty: registers nothing, open() is false
  MemoryRegion(MemoryRegion&&) noexcept = default;
  MemoryRegion& operator=(MemoryRegion&&) noexcept = default;
  ~MemoryRegion() = default;

  uint8_t* data() const { return data_; }
  uint64_t length() const { return length_; }
  uint64_t key() const { return key_; }
  void* desc() const { return desc_; }
  const RegionDescriptor& descriptor() const { return descriptor_; }

  // Revokes the region: after this, peers' writes with its key fail (where the provider
  // checks keys). Reports the provider's close error.
  Status Close() {
    lease_.reset();
    return mr_.Close("memory region");
  }
  bool open() const { return static_cast<bool>(mr_) || lease_ != nullptr; }

 private:
  friend class FabricNode;
  friend class MemoryPort;

  // Keeps the domain open for as long as the registration lives.
  std::shared_ptr<void> domain_keepalive_;
  Fid<fid_mr> mr_;
  std::unique_ptr<RegionLease> lease_;
  uint8_t* data_ = nullptr;
  uint64_t length_ = 0;
  uint64_t key_ = 0;
  void* desc_ = nullptr;
  RegionDescriptor descriptor_;
};

}  // namespace writ::fabric
