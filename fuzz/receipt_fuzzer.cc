// Receipts arrive from the network (a receiver's answer) and from files
// (`writ verify`): parse, check, verify; anything that parses must re-encode
// to JSON that parses to the same receipt. The sender's check-only reading
// (ReadReceiptFacts) must accept and refuse exactly what the full one does,
// with the same error and the same facts.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "writ/receipt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto receipt = writ::ReceiptFromJson(text);
  auto facts = writ::ReadReceiptFacts(text);
  if (receipt.ok() != facts.ok()) std::abort();
  if (!receipt.ok()) {
    if (receipt.status().message() != facts.status().message()) std::abort();
    return 0;
  }
  const writ::Receipt& r = *receipt;
  if (facts->rung != r.rung || facts->delivery_id != r.delivery.id ||
      facts->bytes != r.delivery.bytes || facts->digest != r.delivery.digest ||
      facts->retention != (r.retention ? r.retention->retention : std::string())) {
    std::abort();
  }
  (void)writ::CheckReceiptConsistency(*receipt);
  (void)writ::VerifyReceipt(*receipt);
  auto again = writ::ReceiptFromJson(writ::ReceiptToJson(*receipt));
  if (!again.ok() || !(*again == *receipt)) std::abort();
  return 0;
}
