// Fixed table of in-flight requests. A request's libfabric context points into
// this table, so a completion maps back to its request id without allocating.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <vector>

namespace writ::fabric {

inline constexpr uint64_t kNoRequest = UINT64_MAX;

struct RequestSlot {
  fi_context2 context;  // first: libfabric hands back &context (FI_CONTEXT mode)
  uint64_t request_id = kNoRequest;
  bool in_use = false;
  bool is_receive = false;  // a posted receive for remote CQ data (FI_RX_CQ_DATA)
};

class RequestTable {
 public:
  explicit RequestTable(size_t capacity) : slots_(capacity) {
    free_.reserve(capacity);
    for (size_t i = capacity; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
  }
  RequestTable(const RequestTable&) = delete;
  RequestTable& operator=(const RequestTable&) = delete;

  // nullptr when every slot is in flight.
  RequestSlot* Acquire(uint64_t request_id, bool is_receive = false) {
    if (free_.empty()) return nullptr;
    RequestSlot& slot = slots_[free_.back()];
    free_.pop_back();
    slot.request_id = request_id;
    slot.in_use = true;
    slot.is_receive = is_receive;
    return &slot;
  }

  void Release(RequestSlot* slot) {
    slot->in_use = false;
    slot->request_id = kNoRequest;
    free_.push_back(static_cast<uint32_t>(slot - slots_.data()));
  }

  // The slot a completion's op_context points at, or nullptr if it is not one of ours.
  RequestSlot* FromContext(void* op_context) {
    if (op_context == nullptr || slots_.empty()) return nullptr;
    auto* slot = static_cast<RequestSlot*>(op_context);
    if (slot < slots_.data() || slot >= slots_.data() + slots_.size()) return nullptr;
    return slot;
  }

  size_t in_flight() const { return slots_.size() - free_.size(); }
  size_t capacity() const { return slots_.size(); }

  template <typename Fn>
  void ForEachInFlight(Fn&& fn) {
    for (auto& slot : slots_) {
      if (slot.in_use) fn(slot);
    }
  }

 private:
  std::vector<RequestSlot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace writ::fabric
