// The one place the public vocabulary (writ/types.h) is named and parsed: the
// command line, receipts, the wire protocol, the store's index and the audit all
// use these names. An out-of-range value (possible after a cast from the wire or
// a file) is named "unknown"; parsers refuse anything but the exact name and say
// which names they know.
#pragma once

#include <cstddef>
#include <string_view>

#include "writ/export.h"
#include "writ/status.h"
#include "writ/types.h"

namespace writ {

WRIT_EXPORT std::string_view RuleName(Rule rule);  // "xxh3-128", "crc32c", "sha256"
WRIT_EXPORT Result<Rule> ParseRule(std::string_view name);
WRIT_EXPORT bool IsKnown(Rule rule);
// Bytes of the digest a rule produces; 0 for an unknown rule.
WRIT_EXPORT size_t DigestSize(Rule rule);

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
