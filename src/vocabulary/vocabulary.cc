#include "writ/vocabulary.h"

#include "vocabulary/name_table.h"

namespace writ {
namespace {

using vocabulary::KnownIn;
using vocabulary::NameIn;
using vocabulary::NameTable;
using vocabulary::ParseIn;

constexpr NameTable<Rule, 5> kRules{{
    {Rule::kXxh3_128, "xxh3-128"},
    {Rule::kCrc32c, "crc32c"},
    {Rule::kSha256, "sha256"},
    {Rule::kXxh3_128Tree1MiB, "xxh3-128-tree-1MiB"},
    {Rule::kSha256Tree1MiB, "sha256-tree-1MiB"},
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

constexpr NameTable<RetentionClass, 3> kSurvives{{
    {RetentionClass::kVolatile, "process-running"},
    {RetentionClass::kProcessRestart, "process-restart"},
    {RetentionClass::kPowerLoss, "power-loss"},
}};

constexpr NameTable<CompletionLevel, 4> kCompletionLevels{{
    {CompletionLevel::kProviderDefault, "default"},
    {CompletionLevel::kInject, "inject"},
    {CompletionLevel::kTransmit, "transmit"},
    {CompletionLevel::kDelivery, "delivery"},
}};

constexpr NameTable<ReceiptRung, 5> kReceiptRungs{{
    {ReceiptRung::kTransport, "transport"},
    {ReceiptRung::kReceived, "received"},
    {ReceiptRung::kValidated, "validated"},
    {ReceiptRung::kProcessed, "processed"},
    {ReceiptRung::kRetained, "retained"},
}};

}  // namespace

std::string_view RuleName(Rule rule) { return NameIn(kRules, rule); }
Result<Rule> ParseRule(std::string_view name) { return ParseIn(kRules, "digest rule", name); }
bool IsKnown(Rule rule) { return KnownIn(kRules, rule); }

size_t DigestSize(Rule rule) {
  switch (rule) {
    case Rule::kXxh3_128: return 16;
    case Rule::kCrc32c: return 4;
    case Rule::kSha256: return 32;
    case Rule::kXxh3_128Tree1MiB: return 16;
    case Rule::kSha256Tree1MiB: return 32;
  }
  return 0;
}

bool IsCryptographic(Rule rule) { return rule == Rule::kSha256 || rule == Rule::kSha256Tree1MiB; }

std::string RuleCaveat(Rule rule) {
  if (IsCryptographic(rule) || !IsKnown(rule)) return "";
  return std::string(RuleName(rule)) +
         " detects accidental corruption, not a hostile sender (who can craft other bytes with "
         "the same digest); sha256 and sha256-tree-1MiB are the rules for adversarial settings";
}

std::string_view RungName(Rung rung) { return NameIn(kRungs, rung); }
Result<Rung> ParseRung(std::string_view name) { return ParseIn(kRungs, "rung", name); }
bool IsKnown(Rung rung) { return KnownIn(kRungs, rung); }

std::string_view RetentionName(RetentionClass retention) { return NameIn(kRetentions, retention); }
Result<RetentionClass> ParseRetention(std::string_view name) {
  return ParseIn(kRetentions, "retention class", name);
}
bool IsKnown(RetentionClass retention) { return KnownIn(kRetentions, retention); }
std::string_view SurvivesName(RetentionClass retention) { return NameIn(kSurvives, retention); }

std::string_view CompletionLevelName(CompletionLevel level) {
  return NameIn(kCompletionLevels, level);
}
Result<CompletionLevel> ParseCompletionLevel(std::string_view name) {
  return ParseIn(kCompletionLevels, "completion level", name);
}

std::string_view ReceiptRungName(ReceiptRung rung) { return NameIn(kReceiptRungs, rung); }
Result<ReceiptRung> ParseReceiptRung(std::string_view name) {
  return ParseIn(kReceiptRungs, "rung", name);
}

}  // namespace writ
