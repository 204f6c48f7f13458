// Checking a receipt offline: is it internally coherent, and did the key it
// names really sign exactly these bytes?
#include <cstring>

#include "receipt/canonical_json.h"
#include "receipt/identity.h"
#include "receipt/merkle.h"
#include "receipt/signing.h"
#include "writ/receipt.h"

namespace writ {
namespace {

Status Invalid(const std::string& what) { return Status::Validation(what); }

size_t DigestHexLength(const std::string& rule) {
  auto parsed = ParseRule(rule);
  return parsed.ok() ? 2 * DigestSize(*parsed) : 0;
}

const char* ObserverFor(ReceiptRung rung) {
  switch (rung) {
    case ReceiptRung::kTransport: return "sender";
    case ReceiptRung::kReceived: return "receiver";
    case ReceiptRung::kValidated: return "receiver application";
    case ReceiptRung::kProcessed: return "receiver application hook";
    case ReceiptRung::kRetained: return "receiver store";
  }
  return "";
}

// One spelling per value: writ writes hex in lower case, and only that form is read.
bool IsLowercaseHexDigits(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

Result<std::vector<uint8_t>> Unhex(const std::string& hex, size_t bytes, const char* field) {
  if (hex.size() != bytes * 2) return Invalid(std::string(field) + ": wrong length");
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = 0;
    for (char c : hex.substr(i * 2, 2)) {
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else
        return Invalid(std::string(field) + ": not lowercase hex");
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return out;
}

}  // namespace

std::string ReceiptSigningBytes(const Receipt& receipt) {
  std::string out;
  receipt::AppendUnsignedReceiptJson(out, receipt);
  return out;
}

Status CheckReceiptConsistency(const Receipt& r) {
  const DeliveryRef& d = r.delivery;
  const size_t hex = DigestHexLength(d.rule);
  if (hex == 0) return Invalid("delivery.rule: unknown rule '" + d.rule + "'");
  if (d.digest.size() != hex) {
    return Invalid("delivery.digest: " + std::to_string(d.digest.size()) + " hex digits, " +
                   d.rule + " has " + std::to_string(hex));
  }
  if (!IsLowercaseHexDigits(d.digest)) return Invalid("delivery.digest: not lowercase hex");
  if (d.bytes > 0) {
    if (d.chunk_size == 0) return Invalid("delivery.chunk_size: 0 for a non-empty delivery");
    const uint64_t chunks = (d.bytes + d.chunk_size - 1) / d.chunk_size;
    if (d.chunks != chunks) {
      return Invalid("delivery.chunks: " + std::to_string(d.chunks) + ", but " +
                     std::to_string(d.bytes) + " bytes in chunks of " +
                     std::to_string(d.chunk_size) + " make " + std::to_string(chunks));
    }
  } else if (d.chunks != 0) {
    return Invalid("delivery.chunks: an empty delivery has no chunks");
  }
  if (r.observer != ObserverFor(r.rung)) {
    return Invalid("observer: a " + std::string(ReceiptRungName(r.rung)) +
                   " receipt is observed by the " + ObserverFor(r.rung) + ", not '" + r.observer +
                   "'");
  }
  if (r.observed_chunks && *r.observed_chunks != d.chunks) {
    return Invalid("observed_chunks: " + std::to_string(*r.observed_chunks) + " of " +
                   std::to_string(d.chunks) + " chunks cannot support this rung");
  }
  if ((r.rung == ReceiptRung::kTransport || r.rung == ReceiptRung::kReceived) &&
      !r.observed_chunks) {
    return Invalid("observed_chunks: missing on a " + std::string(ReceiptRungName(r.rung)) +
                   " receipt");
  }
  if (r.rung == ReceiptRung::kRetained) {
    const std::string& cls = r.retention->retention;
    auto parsed = ParseRetention(cls);
    if (!parsed.ok()) return Invalid("retention: unknown class '" + cls + "'");
    const std::string survives(SurvivesName(*parsed));
    if (r.retention->survives != survives) {
      return Invalid("survives: class " + cls + " survives " + survives + ", not " +
                     r.retention->survives);
    }
  }
  if (r.issued_at.size() < 20 || r.issued_at.back() != 'Z' || r.issued_at[10] != 'T') {
    return Invalid("issued_at: not an RFC 3339 UTC time");
  }
  return Status::Ok();
}

namespace {

bool Verifies(const receipt::PublicKey& key, const std::string& message,
              const receipt::Signature& signature) {
  return receipt::VerifySignature(
      key, std::span(reinterpret_cast<const uint8_t*>(message.data()), message.size()), signature);
}

// The group form: the path's shape fits (leaf_index, leaves), it leads from this
// receipt's leaf to `root`, and `value` signs that root.
Status VerifyGroupSignature(const Receipt& r, const receipt::PublicKey& key,
                            const receipt::Signature& signature) {
  const ReceiptSignature& sig = *r.signature;
  if (sig.leaves == 0) return Invalid("signature.leaves: 0, a group has at least one receipt");
  if (sig.leaf_index >= sig.leaves) {
    return Invalid("signature.leaf_index: " + std::to_string(sig.leaf_index) +
                   " is not below leaves " + std::to_string(sig.leaves));
  }
  const std::vector<std::string> sides = receipt::ExpectedSides(sig.leaf_index, sig.leaves);
  const std::string where =
      "leaf " + std::to_string(sig.leaf_index) + " of " + std::to_string(sig.leaves);
  if (sig.path.size() != sides.size()) {
    return Invalid("signature.path: " + std::to_string(sig.path.size()) + " steps, " + where +
                   " has " + std::to_string(sides.size()));
  }
  for (size_t i = 0; i < sides.size(); ++i) {
    if (sig.path[i].side != sides[i]) {
      return Invalid("signature.path[" + std::to_string(i) + "].side: '" + sig.path[i].side +
                     "', but " + where + " needs '" + sides[i] + "'");
    }
  }
  WRIT_ASSIGN_OR_RETURN(receipt::MerkleHash root,
                        receipt::ParseHashHex(sig.root, "signature.root"));
  WRIT_ASSIGN_OR_RETURN(
      receipt::MerkleHash reached,
      receipt::RootOfPath(receipt::LeafHash(sig.leaf_index, sig.leaves, ReceiptSigningBytes(r)),
                          sig.path));
  if (reached != root) {
    return Invalid(
        "signature.path: does not lead from this receipt to signature.root (the receipt or its "
        "path changed after signing)");
  }
  if (!Verifies(key, receipt::GroupSigningMessage(root), signature)) {
    return Invalid(
        "signature: does not sign signature.root (root changed after signing, or forged)");
  }
  return Status::Ok();
}

}  // namespace

Status VerifyReceipt(const Receipt& r, const std::string& expected_public_key_hex) {
  WRIT_RETURN_IF_ERROR(CheckReceiptConsistency(r));
  if (!r.signature) return Invalid("signature: the receipt is not signed");
  const ReceiptSignature& sig = *r.signature;
  const bool group = sig.algorithm == receipt::kGroupSignatureAlgorithm;
  if (sig.algorithm != "ed25519" && !group)
    return Invalid("signature.algorithm: unsupported '" + sig.algorithm + "'");
  auto key = receipt::ParsePublicKeyHex(sig.public_key);
  if (!key.ok()) return Invalid("signature.public_key: " + key.status().message());
  if (!IsLowercaseHexDigits(sig.public_key))
    return Invalid("signature.public_key: not lowercase hex");
  if (receipt::KeyId(*key) != sig.key_id) {
    return Invalid("signature.key_id: " + sig.key_id + " does not name the embedded public key");
  }
  if (!expected_public_key_hex.empty() && expected_public_key_hex != sig.public_key) {
    return Invalid("signature: signed by key " + sig.key_id + ", not by the key given");
  }
  WRIT_ASSIGN_OR_RETURN(std::vector<uint8_t> value, Unhex(sig.value, 64, "signature.value"));
  receipt::Signature signature{};
  std::memcpy(signature.data(), value.data(), signature.size());
  if (group) return VerifyGroupSignature(r, *key, signature);
  if (!Verifies(*key, ReceiptSigningBytes(r), signature)) {
    return Invalid(
        "signature: does not match the receipt's contents (changed after signing, or forged)");
  }
  return Status::Ok();
}

}  // namespace writ
