#include "protocol/messages.h"

#include <array>
#include <string>
#include <utility>

namespace writ::protocol {
namespace {

template <typename Enum, size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

constexpr NameTable<Rule, 3> kRules{{
    {Rule::kXxh3_128, "xxh3-128"},
    {Rule::kCrc32c, "crc32c"},
    {Rule::kSha256, "sha256"},
}};

constexpr NameTable<Rung, 4> kRungs{{
    {Rung::kTransport, "transport"},
    {Rung::kReceived, "received"},
    {Rung::kValidated, "validated"},
    {Rung::kProcessed, "processed"},
}};

constexpr NameTable<RetentionClass, 3> kRetentions{{
    {RetentionClass::kVolatile, "volatile"},
    {RetentionClass::kProcessRestart, "process-restart"},
    {RetentionClass::kPowerLoss, "power-loss"},
}};

constexpr NameTable<RefuseReason, 12> kRefuseReasons{{
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
}};

constexpr NameTable<MessageType, 9> kMessageTypes{{
    {MessageType::kHello, "hello"},
    {MessageType::kAnnounce, "announce"},
    {MessageType::kGrant, "grant"},
    {MessageType::kCommit, "commit"},
    {MessageType::kReceipt, "receipt"},
    {MessageType::kRefuse, "refuse"},
    {MessageType::kAbort, "abort"},
    {MessageType::kQuery, "query"},
    {MessageType::kQueryAnswer, "query-answer"},
}};

template <typename Enum, size_t N>
std::string_view NameIn(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <typename Enum, size_t N>
bool KnownIn(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& entry : table) {
    if (entry.first == value) return true;
  }
  return false;
}

// "unknown digest rule \"md5\" (known: xxh3-128, crc32c, sha256)"
template <typename Enum, size_t N>
Result<Enum> ParseIn(const NameTable<Enum, N>& table, std::string_view what,
                     std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  std::string known;
  for (const auto& entry : table) {
    if (!known.empty()) known += ", ";
    known += entry.second;
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " \"" + std::string(name) +
                                 "\" (known: " + known + ")");
}

}  // namespace

std::string_view RuleName(Rule rule) { return NameIn(kRules, rule); }
Result<Rule> ParseRule(std::string_view name) { return ParseIn(kRules, "digest rule", name); }
std::string_view RungName(Rung rung) { return NameIn(kRungs, rung); }
Result<Rung> ParseRung(std::string_view name) { return ParseIn(kRungs, "rung", name); }
std::string_view RetentionName(RetentionClass retention) { return NameIn(kRetentions, retention); }
Result<RetentionClass> ParseRetention(std::string_view name) {
  return ParseIn(kRetentions, "retention class", name);
}
std::string_view RefuseReasonName(RefuseReason reason) { return NameIn(kRefuseReasons, reason); }
Result<RefuseReason> ParseRefuseReason(std::string_view name) {
  return ParseIn(kRefuseReasons, "refuse reason", name);
}

bool IsKnown(Rule rule) { return KnownIn(kRules, rule); }
bool IsKnown(Rung rung) { return KnownIn(kRungs, rung); }
bool IsKnown(RetentionClass retention) { return KnownIn(kRetentions, retention); }
bool IsKnown(RefuseReason reason) { return KnownIn(kRefuseReasons, reason); }

size_t DigestSize(Rule rule) {
  switch (rule) {
    case Rule::kXxh3_128: return 16;
    case Rule::kCrc32c: return 4;
    case Rule::kSha256: return 32;
  }
  return 0;
}

MessageType TypeOf(const Message& message) { return static_cast<MessageType>(message.index() + 1); }

std::string_view MessageTypeName(MessageType type) { return NameIn(kMessageTypes, type); }

std::string_view MessageTypeName(const Message& message) {
  return MessageTypeName(TypeOf(message));
}

}  // namespace writ::protocol
