// Signing receipts with an Identity.
#pragma once

#include "receipt/identity.h"
#include "writ/receipt.h"

namespace writ::receipt {

// Fills `receipt.signature` over ReceiptSigningBytes(receipt).
Status SignReceipt(Receipt& receipt, const Identity& identity);
// SignReceipt, then ReceiptToJson(receipt), building the JSON object once.
Result<std::string> SignReceiptToJson(Receipt& receipt, const Identity& identity);

}  // namespace writ::receipt
