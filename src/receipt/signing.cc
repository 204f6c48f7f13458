#include "receipt/signing.h"

#include "receipt/canonical_json.h"
#include "receipt/merkle.h"

namespace writ::receipt {

namespace {

// Room for a receipt's text without growing: the longest writ issues (retained, with
// notes and a group path) are under 2 KiB.
constexpr size_t kReceiptTextReserve = 2048;
// A signature member without a group path: the names, 16 + 64 + 128 hex digits, a root.
constexpr size_t kSignatureMemberReserve = 512;

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

// A receipt's signed text: its unsigned text with the signature member spliced in.
class SignedText {
 public:
  explicit SignedText(const UnsignedReceipt& unsigned_receipt) : u_(unsigned_receipt) {}

  std::string Signed(const ReceiptSignature& signature) const {
    std::string& member = MemberBuffer(signature.path.size());
    AppendSignatureMember(member, signature);
    return Splice(member);
  }
  // As leaf `index` of the group signed with `group`, its path written from the tree.
  std::string SignedInGroup(const ReceiptSignature& group, uint64_t index,
                            const std::vector<std::vector<MerkleHash>>& levels) const {
    std::string& member = MemberBuffer(levels.size());
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
  // The member is written into a buffer this thread reuses, so that the text is exactly as
  // long as it must be (receivers keep these strings with what they retain) at the cost of
  // one allocation.
  static std::string& MemberBuffer(size_t path_steps) {
    thread_local std::string member;
    member.clear();
    member.reserve(kSignatureMemberReserve + 84 * path_steps);
    return member;
  }
  std::string Splice(const std::string& member) const {
    std::string out;
    out.reserve(u_.text.size() + member.size() + 1);
    out.append(u_.text, 0, u_.signature_at)
        .append(member)
        .append(1, ',')
        .append(u_.text, u_.signature_at);
    return out;
  }

  const UnsignedReceipt& u_;
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
  const UnsignedReceipt text = Unsigned(receipt);
  WRIT_ASSIGN_OR_RETURN(receipt.signature, SignMessage(identity, text.text));
  return SignedText(text).Signed(*receipt.signature);
}

namespace {

// One signature over `texts` (at least one): a lone one in the plain form, several as a
// group. With `receipts` (the same receipts, in order), each one's signature is filled in.
Result<std::vector<std::string>> SignTexts(std::span<const UnsignedReceipt> texts,
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
  return SignTexts(UnsignedAll(receipts), identity, &receipts);
}

Result<std::vector<std::string>> SignReceiptGroupJsonOnly(std::vector<Receipt>& receipts,
                                                          const Identity& identity) {
  return SignTexts(UnsignedAll(receipts), identity, nullptr);
}

Result<std::vector<std::string>> SignUnsignedJsonOnly(std::span<const UnsignedReceipt> receipts,
                                                      const Identity& identity) {
  return SignTexts(receipts, identity, nullptr);
}

}  // namespace writ::receipt
