// The one place the public vocabulary (writ/types.h) is named and parsed: the
// command line, receipts, the wire protocol, the store's index and the audit all
// use these names. An out-of-range value (possible after a cast from the wire or
// a file) is named "unknown"; parsers refuse anything but the exact name and say
// which names they know.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "writ/status.h"
#include "writ/types.h"

namespace writ {

// "xxh3-128", "crc32c", "sha256", "xxh3-128-tree-1MiB", "sha256-tree-1MiB"
std::string_view RuleName(Rule rule);
Result<Rule> ParseRule(std::string_view name);
bool IsKnown(Rule rule);
// Bytes of the digest a rule produces; 0 for an unknown rule.
size_t DigestSize(Rule rule);
// Whether a rule resists a hostile sender (sha256, sha256-tree-1MiB). The others detect
// accidental corruption only: a sender can craft other bytes with the same digest.
bool IsCryptographic(Rule rule);
// What a passed digest of `rule` does not rule out, for receipts and `writ verify`: empty for
// a cryptographic rule, else that it detects accidental corruption, not a hostile sender.
std::string RuleCaveat(Rule rule);

std::string_view RungName(Rung rung);  // "transport", "received", "validated", "processed"
Result<Rung> ParseRung(std::string_view name);
bool IsKnown(Rung rung);

std::string_view RetentionName(RetentionClass retention);  // "volatile", "process-restart", ...
Result<RetentionClass> ParseRetention(std::string_view name);
bool IsKnown(RetentionClass retention);
// What a class survives in the audit vocabulary: volatile is "process-running".
std::string_view SurvivesName(RetentionClass retention);

std::string_view CompletionLevelName(CompletionLevel level);  // "default", "inject", ...
Result<CompletionLevel> ParseCompletionLevel(std::string_view name);

std::string_view ReceiptRungName(ReceiptRung rung);  // the four rungs plus "retained"
Result<ReceiptRung> ParseReceiptRung(std::string_view name);

}  // namespace writ
