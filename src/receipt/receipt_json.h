// The JSON value of a receipt, for the code that signs one: it serialises the receipt
// once for the signed bytes and adds only the signature for the final text, instead of
// building the whole object twice (ReceiptToJson is the public form).
#pragma once

#include <nlohmann/json.hpp>

#include "writ/receipt.h"

namespace writ::receipt {

// Without the signature when !with_signature: its dump() is ReceiptSigningBytes.
nlohmann::json ReceiptJsonValue(const Receipt& receipt, bool with_signature);
nlohmann::json SignatureJson(const ReceiptSignature& signature);

}  // namespace writ::receipt
