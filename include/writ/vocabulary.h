// The one place the public vocabulary (writ/types.h) is named and parsed: the
// command line, receipts, the wire protocol, the store's index and the audit all
// use these names. An out-of-range value (possible after a cast from the wire or
// a file) is named "unknown"; parsers refuse anything but the exact name and say
// which names they know.
#pragma once

#include <cstddef>
#include <string_view>

#include "writ/status.h"
#include "writ/types.h"

namespace writ {

std::string_view RuleName(Rule rule);  // "xxh3-128", "crc32c", "sha256"
Result<Rule> ParseRule(std::string_view name);
bool IsKnown(Rule rule);
// Bytes of the digest a rule produces; 0 for an unknown rule.
size_t DigestSize(Rule rule);

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
