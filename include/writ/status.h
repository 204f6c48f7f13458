// Status and Result<T>: the one error type every fallible writ call returns.
// No exception crosses a layer boundary; callers must look at the result.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "writ/export.h"

namespace writ {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong (bad size, bad flag)
  kMalformed,        // bytes from outside (wire, file) do not parse
  kNotFound,         // asked about something that does not exist
  kRefused,          // the peer refused (auth, space, conflicting id, oversize)
  kTransport,        // the fabric failed (error completion, connection lost)
  kValidation,       // digest or length mismatch
  kRetention,        // the retention class could not be reached
  kIo,               // local file or OS call failed
  kUnsupported,      // the provider or build cannot do this
  kWrongRecord,      // asked an error completion for a field it does not define
  kTimeout,
  kCancelled,
  kInternal,
};

WRIT_EXPORT std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] WRIT_EXPORT Status {
 public:
  Status() = default;  // ok

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {ErrorCode::kInvalidArgument, std::move(msg)};
  }
  static Status Malformed(std::string msg) { return {ErrorCode::kMalformed, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {ErrorCode::kNotFound, std::move(msg)}; }
  static Status Refused(std::string msg) { return {ErrorCode::kRefused, std::move(msg)}; }
  static Status Transport(std::string msg) { return {ErrorCode::kTransport, std::move(msg)}; }
  static Status Validation(std::string msg) { return {ErrorCode::kValidation, std::move(msg)}; }
  static Status Retention(std::string msg) { return {ErrorCode::kRetention, std::move(msg)}; }
  static Status Io(std::string msg, int sys_errno = 0) {
    Status s{ErrorCode::kIo, std::move(msg)};
    s.sys_errno_ = sys_errno;
    return s;
  }
  static Status Unsupported(std::string msg) { return {ErrorCode::kUnsupported, std::move(msg)}; }
  static Status WrongRecord(std::string msg) { return {ErrorCode::kWrongRecord, std::move(msg)}; }
  static Status Timeout(std::string msg) { return {ErrorCode::kTimeout, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {ErrorCode::kCancelled, std::move(msg)}; }
  static Status Internal(std::string msg) { return {ErrorCode::kInternal, std::move(msg)}; }

  // A libfabric failure: keeps the provider's own (positive) error number.
  static Status Fabric(ErrorCode code, std::string msg, int fi_errno) {
    Status s{code, std::move(msg)};
    s.fi_errno_ = fi_errno;
    return s;
  }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The libfabric error number (FI_E*, positive) when the failure came from libfabric.
  std::optional<int> fi_errno() const { return fi_errno_; }
  int sys_errno() const { return sys_errno_; }

  // "transport: fi_write: Connection refused (FI_ECONNREFUSED)"
  std::string ToString() const;

  // Prefixes the message with what the caller was doing.
  Status Annotate(std::string_view context) const;

 private:
  Status(ErrorCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::optional<int> fi_errno_;
  int sys_errno_ = 0;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "a Result needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace writ

#define WRIT_CONCAT_INNER(a, b) a##b
#define WRIT_CONCAT(a, b) WRIT_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when it is an error.
#define WRIT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::writ::Status writ_status_ = (expr);        \
    if (!writ_status_.ok()) return writ_status_; \
  } while (0)

#define WRIT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// WRIT_ASSIGN_OR_RETURN(auto x, Compute());
#define WRIT_ASSIGN_OR_RETURN(lhs, expr) \
  WRIT_ASSIGN_OR_RETURN_IMPL(WRIT_CONCAT(writ_result_, __LINE__), lhs, expr)
