#include "receipt/signing.h"

#include "receipt/canonical_json.h"
#include "receipt/merkle.h"

namespace writ::receipt {

namespace {

// Room for a receipt's text and its signature member without growing: the longest writ
// issues (retained, with notes and a group path of 8 steps) are about 2.2 KiB signed.
constexpr size_t kReceiptTextReserve = 3072;

Result<ReceiptSignature> SignMessage(const Identity& identity, std::string_view bytes) {
  WRIT_ASSIGN_OR_RETURN(
      Signature sig,
      identity.Sign(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  static constexpr char kDigits[] = "0123456789abcdef";
  ReceiptSignature out;
  out.value.resize(2 * sig.size());
  for (size_t i = 0; i < sig.size(); ++i) {
    out.value[2 * i] = kDigits[sig[i] >> 4];
    out.value[2 * i + 1] = kDigits[sig[i] & 15];
  }
  out.key_id = identity.key_id();
  out.public_key = PublicKeyHex(identity.public_key());
  return out;
}

// A receipt's signed text: its unsigned text with the signature member spliced in, in the
// text's own string (Unsigned reserved room for it), which the signed text then takes over:
// no second string per receipt.
class SignedText {
 public:
  explicit SignedText(UnsignedReceipt& unsigned_receipt) : u_(unsigned_receipt) {}

  std::string Signed(const ReceiptSignature& signature) && {
    std::string& member = MemberBuffer();
    AppendSignatureMember(member, signature);
    return Splice(member);
  }
  // As leaf `index` of the group signed with `group`, its path written from the tree.
  std::string SignedInGroup(const ReceiptSignature& group, uint64_t index,
                            const std::vector<std::vector<MerkleHash>>& levels) && {
    std::string& member = MemberBuffer();
    AppendGroupSignatureMember(member, group, index, [&levels, index](std::string& out) {
      bool first = true;
      ForEachPathStep(levels, index, [&](std::string_view side, const MerkleHash& sibling) {
        char hex[64];
        HashHexInto(sibling, hex);
        AppendPathStep(out, first, side, std::string_view(hex, sizeof hex));
        first = false;
      });
    });
    return Splice(member);
  }

 private:
  // The member is written into a buffer this thread reuses, then copied into the text.
  static std::string& MemberBuffer() {
    thread_local std::string member;
    member.clear();
    return member;
  }
  std::string Splice(std::string& member) {
    member.push_back(',');
    u_.text.insert(u_.signature_at, member);
    return std::move(u_.text);
  }

  UnsignedReceipt& u_;
};

}  // namespace

UnsignedReceipt Unsigned(const Receipt& receipt) {
  UnsignedReceipt out;
  out.text.reserve(kReceiptTextReserve);
  AppendUnsignedReceiptJson(out.text, receipt, &out.signature_at);
  return out;
}

Status SignReceipt(Receipt& receipt, const Identity& identity) {
  receipt.signature.reset();
  const UnsignedReceipt text = Unsigned(receipt);
  WRIT_ASSIGN_OR_RETURN(receipt.signature, SignMessage(identity, text.text));
  return Status::Ok();
}

Result<std::string> SignReceiptToJson(Receipt& receipt, const Identity& identity) {
  receipt.signature.reset();
  UnsignedReceipt text = Unsigned(receipt);
  WRIT_ASSIGN_OR_RETURN(receipt.signature, SignMessage(identity, text.text));
  return SignedText(text).Signed(*receipt.signature);
}

namespace {

// One signature over `texts` (at least one): a lone one in the plain form, several as a
// group. With `receipts` (the same receipts, in order), each one's signature is filled in.
Result<std::vector<std::string>> SignTexts(std::span<UnsignedReceipt> texts,
                                           const Identity& identity,
                                           std::vector<Receipt>* receipts) {
  if (texts.empty()) return Status::Internal("signing an empty group of receipts");
  if (texts.size() == 1) {
    WRIT_ASSIGN_OR_RETURN(ReceiptSignature lone, SignMessage(identity, texts[0].text));
    std::string json = SignedText(texts[0]).Signed(lone);
    if (receipts != nullptr) (*receipts)[0].signature = std::move(lone);
    return std::vector<std::string>{std::move(json)};
  }
  std::vector<MerkleHash> leaves;
  leaves.reserve(texts.size());
  for (const UnsignedReceipt& text : texts) {
    leaves.push_back(LeafHash(leaves.size(), texts.size(), text.text));
  }
  const auto levels = MerkleLevels(std::move(leaves));
  const MerkleHash& root = levels.back().front();
  WRIT_ASSIGN_OR_RETURN(ReceiptSignature group, SignMessage(identity, GroupSigningMessage(root)));
  group.algorithm = kGroupSignatureAlgorithm;
  group.root = HashHex(root);
  group.leaves = texts.size();
  std::vector<std::string> out;
  out.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (receipts == nullptr) {
      // Straight from the tree: no copy of the group's strings and no string per path
      // step for every receipt (about 40 allocations per small delivery).
      out.push_back(SignedText(texts[i]).SignedInGroup(group, i, levels));
      continue;
    }
    ReceiptSignature& own = (*receipts)[i].signature.emplace(group);
    own.leaf_index = i;
    own.path = InclusionPath(levels, i);
    out.push_back(SignedText(texts[i]).Signed(own));
  }
  return out;
}

std::vector<UnsignedReceipt> UnsignedAll(std::vector<Receipt>& receipts) {
  std::vector<UnsignedReceipt> texts;
  texts.reserve(receipts.size());
  for (Receipt& r : receipts) {
    r.signature.reset();
    texts.push_back(Unsigned(r));
  }
  return texts;
}

}  // namespace

Result<std::vector<std::string>> SignReceiptGroupToJson(std::vector<Receipt>& receipts,
                                                        const Identity& identity) {
  std::vector<UnsignedReceipt> texts = UnsignedAll(receipts);
  return SignTexts(texts, identity, &receipts);
}

Result<std::vector<std::string>> SignReceiptGroupJsonOnly(std::vector<Receipt>& receipts,
                                                          const Identity& identity) {
  std::vector<UnsignedReceipt> texts = UnsignedAll(receipts);
  return SignTexts(texts, identity, nullptr);
}

Result<std::vector<std::string>> SignUnsignedJsonOnly(std::span<UnsignedReceipt> receipts,
                                                      const Identity& identity) {
  return SignTexts(receipts, identity, nullptr);
}

}  // namespace writ::receipt
