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

// A receipt's members, each dumped once: its unsigned text (what a signature or a leaf
// covers) and its signed text, the signature placed in key order. The bytes json::dump
// gives for each (compact, keys sorted), without escaping every member twice.
class ReceiptText {
 public:
  explicit ReceiptText(const nlohmann::json& unsigned_value) {
    for (auto it = unsigned_value.begin(); it != unsigned_value.end(); ++it) {
      members_.emplace_back(it.key(), nlohmann::json(it.key()).dump() + ":" + it.value().dump());
    }
  }
  std::string Unsigned() const { return Join(nullptr); }
  std::string Signed(const ReceiptSignature& signature) const {
    const std::string member = "\"signature\":" + SignatureJson(signature).dump();
    return Join(&member);
  }

 private:
  std::string Join(const std::string* signature) const {
    std::string out = "{";
    bool placed = signature == nullptr;
    for (const auto& [key, text] : members_) {
      if (!placed && key > "signature") {
        out += *signature + ",";
        placed = true;
      }
      out += text + ",";
    }
    if (!placed) out += *signature + ",";
    out.back() = '}';
    return out;
  }

  std::vector<std::pair<std::string, std::string>> members_;  // key, "key":value
};

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
  const ReceiptText text(ReceiptJsonValue(receipt, /*with_signature=*/false));
  WRIT_RETURN_IF_ERROR(SignBytes(receipt, identity, text.Unsigned()));
  return text.Signed(*receipt.signature);
}

Result<std::vector<std::string>> SignReceiptGroupToJson(std::vector<Receipt>& receipts,
                                                        const Identity& identity) {
  if (receipts.size() == 1) {
    WRIT_ASSIGN_OR_RETURN(std::string json, SignReceiptToJson(receipts[0], identity));
    return std::vector<std::string>{std::move(json)};
  }
  if (receipts.empty()) return Status::Internal("signing an empty group of receipts");
  std::vector<ReceiptText> texts;
  std::vector<MerkleHash> leaves;
  for (Receipt& r : receipts) {
    r.signature.reset();
    texts.emplace_back(ReceiptJsonValue(r, /*with_signature=*/false));
    leaves.push_back(LeafHash(leaves.size(), receipts.size(), texts.back().Unsigned()));
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
    out.push_back(texts[i].Signed(own));
  }
  return out;
}

}  // namespace writ::receipt
