// writ audit: reads an evidence bundle (writ.evidence/1) and says what it
// establishes, what it does not, and what to ask the supplier (writ.audit/1).
// The contract is shared/schemas/evidence-and-audit.md; decisions where it is
// silent are in docs/audit.md. Pure functions: no I/O, same bundle → same report.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "writ/export.h"
#include "writ/status.h"

namespace writ::audit {

inline constexpr std::string_view kEvidenceSchema = "writ.evidence/1";
inline constexpr std::string_view kReportSchema = "writ.audit/1";
inline constexpr std::string_view kSuccessStatus = "success";

// ---- The evidence bundle ---------------------------------------------------

enum class Operation { kRdmaWrite, kRdmaWriteWithImm, kSend, kOther };
enum class Transport { kIbRc, kRoceRc, kIwarp, kTcp, kShm, kEfa, kOther };
enum class MemoryType { kDram, kPmem, kGpu, kFile, kOther };
enum class CompletionLevel { kInject, kTransmit, kDelivery, kCommit };
// Where a retention promise keeps the delivery (revision 2, optional).
enum class Medium { kDram, kGpu, kPmem, kDisk, kReplicas, kOther };

// The wire names ("rdma_write", "ib_rc", ...).
WRIT_EXPORT std::string_view ToString(Operation value);
WRIT_EXPORT std::string_view ToString(Transport value);
WRIT_EXPORT std::string_view ToString(MemoryType value);
WRIT_EXPORT std::string_view ToString(CompletionLevel value);
WRIT_EXPORT std::string_view ToString(Medium value);
// The inverse of ToString: the enumerator with wire name `name`, nullopt for any other text.
WRIT_EXPORT std::optional<Operation> ParseOperation(std::string_view name);
WRIT_EXPORT std::optional<Transport> ParseTransport(std::string_view name);
WRIT_EXPORT std::optional<MemoryType> ParseMemoryType(std::string_view name);
WRIT_EXPORT std::optional<CompletionLevel> ParseCompletionLevel(std::string_view name);

// What a retention promise says the object survives, ordered
// process-running < process-restart < power-loss < replicated:1 < replicated:2 ...
struct WRIT_EXPORT Survives {
  enum class Class { kProcessRunning, kProcessRestart, kPowerLoss, kReplicated };
  Class cls = Class::kProcessRunning;
  uint64_t replicas = 0;  // K of replicated:K (≥ 1); 0 for the other classes

  // "process-running", "process-restart", "power-loss" or "replicated:K" with
  // K a decimal integer ≥ 1 without leading zeros; nullopt otherwise.
  static std::optional<Survives> Parse(std::string_view text);
  std::string ToString() const;
  auto operator<=>(const Survives&) const = default;
};

// Context fields: nullopt = not stated (null, absent or an empty string).
struct Context {
  std::optional<Operation> operation;
  std::optional<Transport> transport;
  std::optional<std::string> device;
  std::optional<MemoryType> memory_type;
  std::optional<std::string> software_release;
  std::optional<CompletionLevel> completion_level;
};

struct Portion {
  std::string wr_id;  // the work request that carried it
  std::optional<uint64_t> offset;
  uint64_t bytes = 0;
};

struct Delivery {
  std::string id;
  uint64_t bytes = 0;
  std::vector<Portion> portions;
};

// One completion record. On an error record only wr_id, status, qp_num and
// vendor_err are defined (ibv_poll_cq(3), fi_cq_readerr(3)), so the parser
// keeps nothing else of it: `success_detail` exists only on a success record.
struct WorkCompletion {
  struct SuccessDetail {
    std::optional<std::string> opcode;
    std::optional<uint64_t> byte_len;
  };

  std::string wr_id;
  std::string status;  // "success" or the error's name
  std::optional<uint64_t> qp_num;
  std::optional<int64_t> vendor_err;
  std::optional<SuccessDetail> success_detail;

  bool success() const { return status == kSuccessStatus; }
};

enum class PlacementBasis { kStipulated, kObserved };

struct PlacementEntry {
  std::string delivery;
  PlacementBasis basis = PlacementBasis::kStipulated;
};

struct Notification {
  std::optional<std::string> delivery;
  std::optional<std::string> kind;
  std::optional<uint64_t> imm;
  std::optional<std::string> portion;  // a wr_id of that delivery: about that portion only
};

enum class AckResult { kValidated, kProcessed, kFailed };

// An application-level message from the receiver; any field may be unstated.
struct Acknowledgement {
  std::optional<std::string> label;
  std::optional<std::string> delivery;
  std::optional<uint64_t> bytes;
  std::optional<AckResult> result;
  std::optional<std::string> rule;
};

struct RetentionPromise {
  std::optional<std::string> delivery;
  std::optional<std::string> acknowledged_point;
  std::optional<Survives> survives;
  std::optional<std::string> promise_after_failure;
  std::optional<std::string> evidence;
  std::optional<Medium> medium;

  // All five fields stated (rule 7).
  bool complete() const {
    return delivery && acknowledged_point && survives && promise_after_failure && evidence;
  }
  // Volatile media cannot promise power loss (rule 13).
  bool overreaches() const {
    return (medium == Medium::kDram || medium == Medium::kGpu) && survives &&
           survives->cls >= Survives::Class::kPowerLoss;
  }
};

enum class ClaimKind {
  kWorkRequestsSucceeded,  // count
  kDeliveriesTransferred,  // count
  kPlaced,                 // delivery
  kNotified,               // delivery
  kValidated,              // delivery
  kProcessed,              // delivery
  kDurable,                // delivery, optional survives
  kJobsCompleted,          // count
  kCopies,                 // count, delivery
  kUnknown,                // a kind writ cannot check: never supported
};

struct Claim {
  std::string id;
  ClaimKind kind = ClaimKind::kUnknown;
  std::string kind_name;  // as written in the bundle
  std::optional<uint64_t> count;
  std::optional<std::string> delivery;
  std::optional<Survives> survives;
  std::optional<std::string> text;
};

struct EvidenceBundle {
  Context context;
  std::vector<Delivery> deliveries;
  std::vector<WorkCompletion> work_completions;
  std::vector<PlacementEntry> placement;
  std::vector<Notification> notifications;
  std::vector<Acknowledgement> acknowledgements;
  std::vector<RetentionPromise> retention_promises;
  std::vector<Claim> claims;
};

// Strict, typed parse of a writ.evidence/1 document. A malformed bundle gives
// Status::Malformed("<json path>: <what was wrong>") for the first bad field,
// e.g. "deliveries[0].portions[2].bytes: expected integer". Unknown fields are
// skipped unread (duplicate keys allowed inside them); nesting deeper than 512
// levels anywhere, and integers past 2^64-1 in defined fields, are malformed.
// Never throws.
WRIT_EXPORT Result<EvidenceBundle> ParseBundle(std::string_view json_text);
// The same, read as it streams in: the text is never held whole. A read error
// of `in` is reported as Status::Io.
WRIT_EXPORT Result<EvidenceBundle> ParseBundle(std::istream& in);

// The writ.evidence/1 document of `bundle`, pretty-printed, ending in a newline:
// what ParseBundle reads back into the same bundle. Unstated fields are null, or
// left out where the contract makes them optional (offset, opcode, portion,
// medium, a claim's count/delivery/survives/text).
WRIT_EXPORT std::string BundleToJson(const EvidenceBundle& bundle);

// ---- The audit report ------------------------------------------------------

enum class TransportState { kEstablished, kFailed, kIncomplete };
enum class PlacementState { kObserved, kStipulated, kNotEstablished };
enum class NotificationState { kEstablished, kPartial, kNone };
enum class ValidationState { kEstablished, kFailed, kUnresolved, kUnknown };
enum class ProcessingState { kEstablished, kUnknown };

WRIT_EXPORT std::string_view ToString(TransportState value);
WRIT_EXPORT std::string_view ToString(PlacementState value);
WRIT_EXPORT std::string_view ToString(NotificationState value);
WRIT_EXPORT std::string_view ToString(ValidationState value);
WRIT_EXPORT std::string_view ToString(ProcessingState value);

struct WRIT_EXPORT RetentionState {
  enum class Kind { kNonePromised, kIncompletePromise, kPromised };
  Kind kind = Kind::kNonePromised;
  Survives survives;  // meaningful for kPromised: the strongest complete promise

  // "none_promised", "incomplete_promise" or the promised class.
  std::string ToString() const;
};

struct DeliveryReport {
  std::string id;
  uint64_t bytes = 0;
  uint64_t portions = 0;
  TransportState transport = TransportState::kIncomplete;
  PlacementState placement = PlacementState::kNotEstablished;
  NotificationState notification = NotificationState::kNone;
  ValidationState validation = ValidationState::kUnknown;
  ProcessingState processing = ProcessingState::kUnknown;
  RetentionState retention;
  std::vector<std::string> reasons;    // one sentence per conclusion that is not plain
  std::vector<std::string> questions;  // what to ask the supplier (gathered in AuditReport)
};

enum class Verdict { kSupported, kNotSupported };
WRIT_EXPORT std::string_view ToString(Verdict value);

struct ClaimVerdict {
  std::string id;
  Verdict verdict = Verdict::kNotSupported;
  std::string reason;
  // Human output only: the claim as written and, when not supported, the question to ask.
  std::string kind;
  std::optional<std::string> text;
  std::string question;
  // The claim's own fields, which revision 3 matches against embedded receipts.
  ClaimKind claim_kind = ClaimKind::kUnknown;
  std::optional<uint64_t> count;
  std::optional<std::string> delivery;
  std::optional<Survives> survives;
  // Revision 3 (ApplyReceiptChecks): the key ids of the verified receipts a supported claim
  // is drawn from; empty: stated, not signed.
  std::vector<std::string> signed_by;
};

// An entry naming a delivery id the bundle does not have (rule 14).
struct UnattributedEntry {
  enum class Kind { kAcknowledgement, kNotification, kPlacement, kRetentionPromise };
  Kind kind = Kind::kAcknowledgement;
  uint64_t index = 0;  // in the bundle's list of that kind
  std::string delivery;
};
WRIT_EXPORT std::string_view ToString(UnattributedEntry::Kind value);

// Revision 3: one receipt embedded in a bundle (its top-level "receipts"), as checked by
// a layer that verifies signatures (audit itself never does: it is pure and links no
// cryptography). The fields after `problem` are read from the receipt when it parsed.
struct ReceiptCheck {
  // kUnpinned: its signature verifies, but by a key --key / --trust did not name.
  enum class State { kVerified, kInvalid, kNotSigned, kUnpinned };
  std::string where;  // "receipts[2]"
  State state = State::kInvalid;
  std::string problem;  // why it is not verified; empty when it is
  std::string key_id;   // the signer (verified receipts)
  std::string rung;     // "transport", "received", "validated", "processed", "retained"
  std::string delivery;
  uint64_t bytes = 0;
  std::optional<uint64_t> observed_chunks;  // transport / received
  std::optional<Survives> survives;         // retained
  // What a replicated:K judgement compares (docs/audit.md, R3-7): the delivery's rule and
  // digest as the receipt names them, and the failure domain it signs (if any).
  std::string rule;
  std::string digest;
  std::optional<std::string> failure_domain;
};
WRIT_EXPORT std::string_view ToString(ReceiptCheck::State value);

// Revision 3, replicated:K (docs/audit.md, R3-7): the bundle's top-level "certificate"
// (writ.replicated/1) as a signature-checking layer found it. A replicated claim is drawn
// from its members only.
struct CertificateCheck {
  std::string problem;        // why the certificate itself could not be read; empty when it was
  std::optional<uint64_t> k;  // as the certificate states it
  // The delivery it states (id, bytes, rule, digest); members must name the same.
  std::string delivery;
  uint64_t bytes = 0;
  std::string rule;
  std::string digest;
  std::vector<ReceiptCheck> members;  // where: "certificate.members[i]"
};

// What revision 3 found about the bundle's embedded receipts.
struct SignatureReport {
  struct Entry {
    ReceiptCheck check;
    bool attributed = true;  // names a delivery of this bundle
  };
  bool pinned = false;  // signers restricted (--key / --trust)
  uint64_t verified = 0;
  std::vector<std::string> keys;                // the key ids of the verified, attributed receipts
  std::vector<Entry> receipts;                  // bundle order
  std::optional<CertificateCheck> certificate;  // the bundle carries one (R3-7)
};

struct AuditReport {
  uint64_t records = 0;
  uint64_t successful = 0;
  uint64_t failed = 0;
  uint64_t logical_deliveries = 0;
  uint64_t placed_bytes = 0;
  std::vector<DeliveryReport> deliveries;       // bundle order
  std::vector<ClaimVerdict> claims;             // bundle order
  std::vector<std::string> missing_context;     // contract order of the context fields
  std::vector<UnattributedEntry> unattributed;  // placement, notifications, acks, promises
  // Rule 16: every question of the deliveries and of the unsupported claims,
  // deduplicated, in input order; the human report prints them under "Ask next".
  std::vector<std::string> questions;
  // Revision 3, when ApplyReceiptChecks ran: absent in a revision-2 report.
  std::optional<SignatureReport> signatures;
};

// Applies the contract's rules. Pure and deterministic; O(records + portions).
WRIT_EXPORT AuditReport Audit(const EvidenceBundle& bundle);

// Audit(*ParseBundle(in)) in one pass, the same report or the same error, keeping
// of each completion record only what the rules read: memory stays near 1.5 × the
// bundle's size (issue 18). The bundle's own lists stay typed.
WRIT_EXPORT Result<AuditReport> AuditStream(std::istream& in);

// Revision 3 (docs/audit.md): judges `report`'s claims against the bundle's embedded
// receipts as `checks` found them. A supported claim is marked signed by the keys of the
// verified receipts it is drawn from, or left stated, not signed; it becomes unsupported
// when a verified receipt about its delivery contradicts it, or when every embedded
// receipt it would be drawn from fails verification. Pure and deterministic.
WRIT_EXPORT void ApplyReceiptChecks(AuditReport& report, const std::vector<ReceiptCheck>& checks,
                                    bool pinned);
// The same, with the bundle's replicated:K certificate (when it carries one): a claim that
// needs replicated:K (`durable` surviving replicated:K, `copies` K) is supported only when
// K of its members are verified retained receipts of the claim's delivery (same id, bytes,
// rule and digest) from K distinct keys in K distinct signed failure domains (R3-7).
WRIT_EXPORT void ApplyReceiptChecks(AuditReport& report, const std::vector<ReceiptCheck>& checks,
                                    bool pinned,
                                    const std::optional<CertificateCheck>& certificate);

// The writ.audit/1 document, pretty-printed, ending in a newline.
WRIT_EXPORT std::string ReportToJson(const AuditReport& report);

struct TextOptions {
  // Deliveries explained one by one; the rest are summed up in one line (0 = all).
  std::size_t max_deliveries = 0;
};

// A short, plain explanation per delivery and per claim, with the questions to
// put to the supplier for each missing context field and each unsupported claim.
WRIT_EXPORT std::string ReportToText(const AuditReport& report, const TextOptions& options = {});

// The question to ask when context field `field` ("device", ...) is not stated.
WRIT_EXPORT std::string_view MissingContextQuestion(std::string_view field);

}  // namespace writ::audit
