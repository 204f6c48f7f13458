// Signing receipts with an Identity.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "receipt/identity.h"
#include "writ/receipt.h"

namespace writ::receipt {

// A receipt's canonical JSON without its signature (ReceiptSigningBytes), and where its
// signature member goes: what a signature, or a group's leaf, covers. A receiver issues its
// receipts as these, so that a receipt waiting for its group's signature is one string.
struct UnsignedReceipt {
  std::string text;
  size_t signature_at = 0;
};
UnsignedReceipt Unsigned(const Receipt& receipt);  // its signature, if any, left out

// Fills `receipt.signature` over ReceiptSigningBytes(receipt).
Status SignReceipt(Receipt& receipt, const Identity& identity);
// SignReceipt, then ReceiptToJson(receipt), building the JSON object once.
Result<std::string> SignReceiptToJson(Receipt& receipt, const Identity& identity);
// Signs every receipt of `receipts` (at least one) with one Ed25519 signature: a lone
// receipt in the plain "ed25519" form (as SignReceiptToJson), several in the
// "ed25519-merkle-sha256" group form (merkle.h), filling each `receipt.signature`. Their
// canonical JSON, in order.
Result<std::vector<std::string>> SignReceiptGroupToJson(std::vector<Receipt>& receipts,
                                                        const Identity& identity);
// The same texts, byte for byte, but a group's signature is written into each text straight
// from the tree and not kept in `receipts` (left unsigned): for a signer that keeps only
// the texts (the receiver's), without a copy of the group's strings and a string per path
// step for every receipt.
Result<std::vector<std::string>> SignReceiptGroupJsonOnly(std::vector<Receipt>& receipts,
                                                          const Identity& identity);
// SignReceiptGroupJsonOnly of receipts already written as their unsigned texts; each signed
// text is its unsigned text's string, taken over (`receipts` are left empty).
Result<std::vector<std::string>> SignUnsignedJsonOnly(std::span<UnsignedReceipt> receipts,
                                                      const Identity& identity);

}  // namespace writ::receipt
