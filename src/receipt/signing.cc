#include "receipt/signing.h"

namespace writ::receipt {

Status SignReceipt(Receipt& receipt, const Identity& identity) {
  receipt.signature.reset();
  const std::string bytes = ReceiptSigningBytes(receipt);
  WRIT_ASSIGN_OR_RETURN(Signature sig, identity.Sign(std::span(
                                           reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  static const char* d = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : sig) {
    hex += d[b >> 4];
    hex += d[b & 15];
  }
  receipt.signature = ReceiptSignature{"ed25519", identity.key_id(), PublicKeyHex(identity.public_key()), hex};
  return Status::Ok();
}

}  // namespace writ::receipt
