// Reading JSON that was signed: a duplicated key (which nlohmann::json resolves by
// keeping one copy silently) or a field the signed form does not have is an error that
// names the field, so that what is shown is exactly what was signed.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "writ/status.h"

namespace writ::receipt {

// Parses `text` as exactly one JSON value; Malformed naming the path of the first
// duplicated key ("delivery.bytes: duplicate key"), or "<what>: not valid JSON". A leading byte
// order mark or any NUL byte (which nlohmann would skip, or stop reading at) is refused too.
Result<nlohmann::json> ParseJsonWithoutDuplicateKeys(std::string_view text, std::string_view what);

// Malformed naming the first key of `object` not in `known` ("<prefix>key: unknown field
// (not part of the signed receipt)"). `prefix` is "" or a path ending in '.'.
Status CheckKnownFields(const nlohmann::json& object, std::string_view prefix,
                        std::span<const std::string_view> known);

}  // namespace writ::receipt
