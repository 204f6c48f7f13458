#include "protocol/messages.h"

#include <string>

#include "vocabulary/name_table.h"

namespace writ::protocol {
namespace {

using vocabulary::KnownIn;
using vocabulary::NameIn;
using vocabulary::NameTable;
using vocabulary::ParseIn;

constexpr NameTable<RefuseReason, 14> kRefuseReasons{{
    {RefuseReason::kAuth, "auth"},
    {RefuseReason::kSpace, "space"},
    {RefuseReason::kConflictingId, "conflicting id"},
    {RefuseReason::kOversize, "oversize"},
    {RefuseReason::kMalformed, "malformed"},
    {RefuseReason::kUnknownDelivery, "unknown delivery"},
    {RefuseReason::kLimit, "limit"},
    {RefuseReason::kUnsupported, "unsupported"},
    {RefuseReason::kInternal, "internal"},
    {RefuseReason::kValidation, "validation"},
    {RefuseReason::kRetention, "retention"},
    {RefuseReason::kShuttingDown, "shutting down"},
    {RefuseReason::kProcessing, "processing"},
    {RefuseReason::kTarget, "target"},
}};

constexpr NameTable<MessageType, 16> kMessageTypes{{
    {MessageType::kHello, "hello"},
    {MessageType::kAnnounce, "announce"},
    {MessageType::kGrant, "grant"},
    {MessageType::kCommit, "commit"},
    {MessageType::kReceipt, "receipt"},
    {MessageType::kRefuse, "refuse"},
    {MessageType::kAbort, "abort"},
    {MessageType::kQuery, "query"},
    {MessageType::kQueryAnswer, "query-answer"},
    {MessageType::kReceipts, "receipts"},
    {MessageType::kRing, "ring"},
    {MessageType::kDeliver, "deliver"},
    {MessageType::kSlotsFree, "slots-free"},
    {MessageType::kRemove, "remove"},
    {MessageType::kRemoveAnswer, "remove-answer"},
    {MessageType::kWritten, "written"},
}};

}  // namespace

std::string_view RefuseReasonName(RefuseReason reason) { return NameIn(kRefuseReasons, reason); }
Result<RefuseReason> ParseRefuseReason(std::string_view name) {
  return ParseIn(kRefuseReasons, "refuse reason", name);
}

bool IsKnown(RefuseReason reason) { return KnownIn(kRefuseReasons, reason); }

MessageType TypeOf(const Message& message) { return static_cast<MessageType>(message.index() + 1); }

std::string_view MessageTypeName(MessageType type) { return NameIn(kMessageTypes, type); }

std::string_view MessageTypeName(const Message& message) {
  return MessageTypeName(TypeOf(message));
}

std::vector<const Receipt*> ReceiptsOf(const Message& message) {
  std::vector<const Receipt*> out;
  if (const auto* one = std::get_if<Receipt>(&message)) out.push_back(one);
  if (const auto* batch = std::get_if<Receipts>(&message)) {
    for (const Receipt& r : batch->receipts) out.push_back(&r);
  }
  return out;
}

}  // namespace writ::protocol
