// WorkCompletion: one completion-queue record, success or error.
//
// The verbs rule (ibv_poll_cq(3), fi_cq_readerr(3)): on an error record only
// the request id, the status, the endpoint and the provider error mean
// anything. An error WorkCompletion does not even hold the other fields: its
// other accessors return a kWrongRecord error, never a value.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "writ/status.h"

namespace writ::fabric {

using EndpointId = uint32_t;
inline constexpr EndpointId kNoEndpoint = UINT32_MAX;

// Which side and which kind of operation a success record reports.
enum class Operation : uint8_t {
  kWrite,        // our RMA write completed (initiator)
  kRemoteWrite,  // a peer's write landed in our memory and notified us (target)
  kSend,
  kReceive,
  kOther,
};
std::string_view OperationName(Operation op);

// The status of one record: "success" or the named fabric error.
struct CompletionStatus {
  int fi_errno = 0;  // 0 for success, else positive FI_E* value
  bool ok() const { return fi_errno == 0; }
  std::string Name() const;  // "success", "FI_ECANCELED", ...
};

struct ProviderError {
  int prov_errno = 0;
  std::string text;  // fi_cq_strerror's text; synthesized records say what happened
};

class WorkCompletion {
 public:
  struct SuccessFields {
    Operation operation;
    uint64_t flags;                       // FI_* completion flags as reported
    std::optional<uint64_t> length;       // only where the provider defines it
    std::optional<uint64_t> remote_data;  // only with FI_REMOTE_CQ_DATA
    // RDM with FI_SOURCE (shm): the writer's address in this node's address vector,
    // FI_ADDR_NOTAVAIL when it is not there; FI_ADDR_UNSPEC elsewhere (on MSG the endpoint
    // names the writer; rxm names none).
    uint64_t source = FI_ADDR_UNSPEC;
  };

  static WorkCompletion Success(uint64_t request_id, EndpointId endpoint, SuccessFields fields);
  static WorkCompletion Error(uint64_t request_id, EndpointId endpoint, int fi_errno,
                              ProviderError provider_error);

  // Valid on every record.
  bool ok() const { return std::holds_alternative<SuccessFields>(fields_); }
  uint64_t request_id() const { return request_id_; }
  CompletionStatus status() const { return status_; }
  EndpointId endpoint() const { return endpoint_; }

  // Valid on error records only (a success record has no provider error).
  Result<ProviderError> provider_error() const;

  // Valid on success records only; on an error record these return kWrongRecord.
  Result<Operation> operation() const;
  Result<uint64_t> flags() const;
  Result<uint64_t> length() const;       // also kWrongRecord where the provider leaves it undefined
  Result<uint64_t> remote_data() const;  // also kWrongRecord without FI_REMOTE_CQ_DATA
  // Who wrote: this record's endpoint and, on RDM, the writer's address (SuccessFields::source).
  Result<uint64_t> source() const;

  // One line for logs: never prints a field the record does not define.
  std::string Describe() const;

 private:
  WorkCompletion(uint64_t request_id, EndpointId endpoint, CompletionStatus status,
                 std::variant<SuccessFields, ProviderError> fields)
      : request_id_(request_id), endpoint_(endpoint), status_(status), fields_(std::move(fields)) {}

  uint64_t request_id_;
  EndpointId endpoint_;
  CompletionStatus status_;
  std::variant<SuccessFields, ProviderError> fields_;
};

// Tally of a batch of records: counts what each record says, never infers.
struct CompletionTally {
  uint64_t records = 0;
  uint64_t successes = 0;
  uint64_t errors = 0;
  void Add(const WorkCompletion& wc) {
    ++records;
    if (wc.ok())
      ++successes;
    else
      ++errors;
  }
};

}  // namespace writ::fabric
