// One RAII owner per libfabric handle. Close() reports the provider's error;
// the destructor closes too but cannot report, so owners close explicitly.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <string_view>
#include <utility>

#include "fabric/fabric_error.h"
#include "fabric/libfabric_api.h"

namespace writ::fabric {

template <typename T>
class Fid {
 public:
  Fid() = default;
  explicit Fid(T* handle) : handle_(handle) {}
  Fid(const Fid&) = delete;
  Fid& operator=(const Fid&) = delete;
  Fid(Fid&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Fid& operator=(Fid&& other) noexcept {
    if (this != &other) {
      (void)Close("handle");
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Fid() { (void)Close("handle"); }

  T* get() const { return handle_; }
  fid_t fid() const { return handle_ ? &handle_->fid : nullptr; }
  explicit operator bool() const { return handle_ != nullptr; }

  // For the libfabric open calls that fill a T**. Only on an empty owner.
  T** out() { return &handle_; }

  Status Close(std::string_view what) {
    if (handle_ == nullptr) return Status::Ok();
    const int rc = fi_close(&handle_->fid);
    handle_ = nullptr;
    if (rc != 0) return FabricStatus(rc, std::string("fi_close(") + std::string(what) + ")");
    return Status::Ok();
  }

 private:
  T* handle_ = nullptr;
};

struct InfoDeleter {
  // An fi_info came from libfabric, so the library is loaded when there is one to free.
  void operator()(fi_info* info) const {
    if (auto api = Libfabric(); info != nullptr && api.ok()) (*api)->freeinfo(info);
  }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// Keeps the first failure of several closes: every close is attempted.
class CloseCollector {
 public:
  void Add(Status status) {
    if (first_.ok() && !status.ok()) first_ = std::move(status);
  }
  Status Take() { return std::move(first_); }

 private:
  Status first_;
};

}  // namespace writ::fabric
