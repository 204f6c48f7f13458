#include "writ/status.h"

namespace writ {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kMalformed: return "malformed";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kRefused: return "refused";
    case ErrorCode::kTransport: return "transport";
    case ErrorCode::kValidation: return "validation";
    case ErrorCode::kRetention: return "retention";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kWrongRecord: return "wrong record";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(ErrorCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) return *this;
  Status s = *this;
  s.message_ = std::string(context) + ": " + message_;
  return s;
}

}  // namespace writ
