// The canonical JSON of a receipt (docs/security.md, "Receipts"), written field by field in
// its fixed key order instead of through a JSON document: compact, keys sorted byte-wise,
// strings escaped as RFC 8259 requires and nothing more (\" \\ \b \f \n \r \t, other
// controls as \u00xx, everything else as is), unsigned numbers in decimal. The bytes are
// those nlohmann::json::dump() gives for the same object (tests/unit/receipt_writer_test.cc
// holds the two side by side); nothing here allocates beyond growing `out`.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "writ/receipt.h"

namespace writ::receipt {

// `text` as a JSON string, quotes included. A byte that is not valid UTF-8 (never in a
// receipt writ issues: its ids are printable ASCII) is written as U+FFFD.
void AppendJsonString(std::string& out, std::string_view text);

// The receipt without its signature: the bytes a signature or a group leaf covers.
// `signature_at` (when given) receives the offset in `out` where the signature member
// belongs ("signature" sorts just before "statement", which every receipt has).
void AppendUnsignedReceiptJson(std::string& out, const Receipt& receipt,
                               size_t* signature_at = nullptr);
// `"signature":{...}` for `signature`, plain or group form.
void AppendSignatureMember(std::string& out, const ReceiptSignature& signature);
// The same for a group signature `group` (its own path and leaf index unused) as leaf
// `leaf_index` carries it, the path's steps written by `append_path` with AppendPathStep:
// the group's signer writes every leaf's member straight from the tree.
void AppendGroupSignatureMember(std::string& out, const ReceiptSignature& group,
                                uint64_t leaf_index,
                                const std::function<void(std::string&)>& append_path);
// One step of a group path, `{"hash":"...","side":"..."}`; `first` false puts a comma first.
void AppendPathStep(std::string& out, bool first, std::string_view side, std::string_view hash);
// The receipt with `receipt.signature` when it has one: ReceiptToJson.
void AppendReceiptJson(std::string& out, const Receipt& receipt);

// NowRfc3339 (an `issued_at`) into `out`, replacing what it held (its room is reused).
void AssignNowRfc3339(std::string& out);

}  // namespace writ::receipt
