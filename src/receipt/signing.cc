#include "receipt/signing.h"

#include "receipt/receipt_json.h"

namespace writ::receipt {

namespace {

Status SignBytes(Receipt& receipt, const Identity& identity, const std::string& bytes) {
  WRIT_ASSIGN_OR_RETURN(
      Signature sig,
      identity.Sign(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  static const char* d = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : sig) {
    hex += d[b >> 4];
    hex += d[b & 15];
  }
  receipt.signature =
      ReceiptSignature{"ed25519", identity.key_id(), PublicKeyHex(identity.public_key()), hex};
  return Status::Ok();
}

}  // namespace

Status SignReceipt(Receipt& receipt, const Identity& identity) {
  receipt.signature.reset();
  return SignBytes(receipt, identity, ReceiptSigningBytes(receipt));
}

Result<std::string> SignReceiptToJson(Receipt& receipt, const Identity& identity) {
  receipt.signature.reset();
  nlohmann::json j = ReceiptJsonValue(receipt, /*with_signature=*/false);
  WRIT_RETURN_IF_ERROR(SignBytes(receipt, identity, j.dump()));
  j["signature"] = SignatureJson(*receipt.signature);
  return j.dump();
}

}  // namespace writ::receipt
