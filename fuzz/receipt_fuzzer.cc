// Receipts arrive from the network (a receiver's answer) and from files
// (`writ verify`): parse, check, verify; anything that parses must re-encode
// to JSON that parses to the same receipt.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "writ/receipt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto receipt = writ::ReceiptFromJson(text);
  if (!receipt.ok()) return 0;
  (void)writ::CheckReceiptConsistency(*receipt);
  (void)writ::VerifyReceipt(*receipt);
  auto again = writ::ReceiptFromJson(writ::ReceiptToJson(*receipt));
  if (!again.ok() || !(*again == *receipt)) std::abort();
  return 0;
}
