#include "fabric/work_completion.h"

#include <rdma/fi_errno.h>

#include <string>

#include "fabric/fabric_error.h"

namespace writ::fabric {
namespace {

Status NotOnErrorRecord(const char* field, uint64_t request_id, const CompletionStatus& status) {
  return Status::WrongRecord(std::string(field) + " is undefined on an error completion (request " +
                             std::to_string(request_id) + ", " + status.Name() +
                             "): only request id, status, endpoint and provider error are valid");
}

}  // namespace

std::string_view OperationName(Operation op) {
  switch (op) {
    case Operation::kWrite: return "rdma_write";
    case Operation::kRemoteWrite: return "remote_write";
    case Operation::kSend: return "send";
    case Operation::kReceive: return "receive";
    case Operation::kOther: return "other";
  }
  return "other";
}

std::string CompletionStatus::Name() const { return FabricErrorName(fi_errno); }

WorkCompletion WorkCompletion::Success(uint64_t request_id, EndpointId endpoint,
                                       SuccessFields fields) {
  return WorkCompletion(request_id, endpoint, CompletionStatus{0}, fields);
}

WorkCompletion WorkCompletion::Error(uint64_t request_id, EndpointId endpoint, int fi_errno,
                                     ProviderError provider_error) {
  // An error record whose provider left err at 0 is still an error.
  if (fi_errno == 0) fi_errno = FI_EOTHER;
  return WorkCompletion(request_id, endpoint, CompletionStatus{fi_errno},
                        std::move(provider_error));
}

Result<ProviderError> WorkCompletion::provider_error() const {
  if (const auto* err = std::get_if<ProviderError>(&fields_)) return *err;
  return Status::WrongRecord("a success completion carries no provider error (request " +
                             std::to_string(request_id_) + ")");
}

Result<Operation> WorkCompletion::operation() const {
  if (const auto* ok = std::get_if<SuccessFields>(&fields_)) return ok->operation;
  return NotOnErrorRecord("operation", request_id_, status_);
}

Result<uint64_t> WorkCompletion::flags() const {
  if (const auto* ok = std::get_if<SuccessFields>(&fields_)) return ok->flags;
  return NotOnErrorRecord("flags", request_id_, status_);
}

Result<uint64_t> WorkCompletion::length() const {
  const auto* ok = std::get_if<SuccessFields>(&fields_);
  if (ok == nullptr) return NotOnErrorRecord("length", request_id_, status_);
  if (!ok->length) {
    return Status::WrongRecord("length is not defined for a " +
                               std::string(OperationName(ok->operation)) + " completion");
  }
  return *ok->length;
}

Result<uint64_t> WorkCompletion::source() const {
  const auto* ok = std::get_if<SuccessFields>(&fields_);
  if (ok == nullptr) return NotOnErrorRecord("source", request_id_, status_);
  return ok->source;
}

Result<uint64_t> WorkCompletion::remote_data() const {
  const auto* ok = std::get_if<SuccessFields>(&fields_);
  if (ok == nullptr) return NotOnErrorRecord("remote data", request_id_, status_);
  if (!ok->remote_data) return Status::WrongRecord("this completion carries no remote CQ data");
  return *ok->remote_data;
}

std::string WorkCompletion::Describe() const {
  std::string out = "request " + std::to_string(request_id_) + " endpoint " +
                    (endpoint_ == kNoEndpoint ? std::string("?") : std::to_string(endpoint_)) +
                    " " + status_.Name();
  if (const auto* ok = std::get_if<SuccessFields>(&fields_)) {
    out += " " + std::string(OperationName(ok->operation));
    if (ok->length) out += " len " + std::to_string(*ok->length);
    if (ok->remote_data) out += " data " + std::to_string(*ok->remote_data);
  } else {
    const auto& err = std::get<ProviderError>(fields_);
    out += " prov_errno " + std::to_string(err.prov_errno) + " (" + err.text + ")";
  }
  return out;
}

}  // namespace writ::fabric
