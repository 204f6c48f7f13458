// The one place the public vocabulary (writ/types.h) is named and parsed: the
// command line, receipts, the wire protocol, the store's index and the audit all
// use these names. An out-of-range value (possible after a cast from the wire or
// a file) is named "unknown"; parsers refuse anything but the exact name and say
// which names they know.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "writ/export.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

// "xxh3-128", "crc32c", "sha256", "xxh3-128-tree-1MiB", "sha256-tree-1MiB"
WRIT_EXPORT std::string_view RuleName(Rule rule);
WRIT_EXPORT Result<Rule> ParseRule(std::string_view name);
WRIT_EXPORT bool IsKnown(Rule rule);
// Bytes of the digest a rule produces; 0 for an unknown rule.
WRIT_EXPORT size_t DigestSize(Rule rule);
// Whether a rule resists a hostile sender (sha256, sha256-tree-1MiB). The others detect
// accidental corruption only: a sender can craft other bytes with the same digest.
WRIT_EXPORT bool IsCryptographic(Rule rule);
// What a passed digest of `rule` does not rule out, for receipts and `writ verify`: empty for
// a cryptographic rule, else that it detects accidental corruption, not a hostile sender.
WRIT_EXPORT std::string RuleCaveat(Rule rule);

WRIT_EXPORT std::string_view RungName(
    Rung rung);  // "transport", "received", "validated", "processed"
WRIT_EXPORT Result<Rung> ParseRung(std::string_view name);
WRIT_EXPORT bool IsKnown(Rung rung);

WRIT_EXPORT std::string_view RetentionName(
    RetentionClass retention);  // "volatile", "process-restart", ...
WRIT_EXPORT Result<RetentionClass> ParseRetention(std::string_view name);
WRIT_EXPORT bool IsKnown(RetentionClass retention);
// What a class survives in the audit vocabulary: volatile is "process-running".
WRIT_EXPORT std::string_view SurvivesName(RetentionClass retention);

WRIT_EXPORT std::string_view CompletionLevelName(
    CompletionLevel level);  // "default", "inject", ...
WRIT_EXPORT Result<CompletionLevel> ParseCompletionLevel(std::string_view name);

WRIT_EXPORT std::string_view ReceiptRungName(ReceiptRung rung);  // the four rungs plus "retained"
WRIT_EXPORT Result<ReceiptRung> ParseReceiptRung(std::string_view name);

}  // namespace writ
