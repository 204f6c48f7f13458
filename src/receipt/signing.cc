#include "receipt/signing.h"

#include "receipt/merkle.h"
#include "receipt/receipt_json.h"

namespace writ::receipt {

namespace {

Result<ReceiptSignature> SignMessage(const Identity& identity, const std::string& bytes) {
  WRIT_ASSIGN_OR_RETURN(
      Signature sig,
      identity.Sign(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  static const char* d = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : sig) {
    hex += d[b >> 4];
    hex += d[b & 15];
  }
  ReceiptSignature out;
  out.key_id = identity.key_id();
  out.public_key = PublicKeyHex(identity.public_key());
  out.value = std::move(hex);
  return out;
}

Status SignBytes(Receipt& receipt, const Identity& identity, const std::string& bytes) {
  WRIT_ASSIGN_OR_RETURN(receipt.signature, SignMessage(identity, bytes));
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

Result<std::vector<std::string>> SignReceiptGroupToJson(std::vector<Receipt>& receipts,
                                                        const Identity& identity) {
  if (receipts.size() == 1) {
    WRIT_ASSIGN_OR_RETURN(std::string json, SignReceiptToJson(receipts[0], identity));
    return std::vector<std::string>{std::move(json)};
  }
  if (receipts.empty()) return Status::Internal("signing an empty group of receipts");
  std::vector<nlohmann::json> values;
  std::vector<MerkleHash> leaves;
  for (Receipt& r : receipts) {
    r.signature.reset();
    values.push_back(ReceiptJsonValue(r, /*with_signature=*/false));
    leaves.push_back(LeafHash(values.back().dump()));
  }
  const auto levels = MerkleLevels(std::move(leaves));
  const MerkleHash& root = levels.back().front();
  WRIT_ASSIGN_OR_RETURN(ReceiptSignature group, SignMessage(identity, GroupSigningMessage(root)));
  group.algorithm = kGroupSignatureAlgorithm;
  group.root = HashHex(root);
  group.leaves = receipts.size();
  std::vector<std::string> out;
  for (size_t i = 0; i < receipts.size(); ++i) {
    ReceiptSignature& own = receipts[i].signature.emplace(group);
    own.leaf_index = i;
    own.path = InclusionPath(levels, i);
    values[i]["signature"] = SignatureJson(own);
    out.push_back(values[i].dump());
  }
  return out;
}

}  // namespace writ::receipt
