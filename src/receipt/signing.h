// Signing receipts with an Identity.
#pragma once

#include <vector>

#include "receipt/identity.h"
#include "writ/receipt.h"

namespace writ::receipt {

// Fills `receipt.signature` over ReceiptSigningBytes(receipt).
Status SignReceipt(Receipt& receipt, const Identity& identity);
// SignReceipt, then ReceiptToJson(receipt), building the JSON object once.
Result<std::string> SignReceiptToJson(Receipt& receipt, const Identity& identity);
// Signs every receipt of `receipts` (at least one) with one Ed25519 signature: a lone
// receipt in the plain "ed25519" form (as SignReceiptToJson), several in the
// "ed25519-merkle-sha256" group form (merkle.h). Their canonical JSON, in order.
Result<std::vector<std::string>> SignReceiptGroupToJson(std::vector<Receipt>& receipts,
                                                        const Identity& identity);

}  // namespace writ::receipt
