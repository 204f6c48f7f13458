// The digest of each rule a delivery is validated against (writ/vocabulary.h names
// the rules), computed incrementally so a receiver can hash chunks as they are retained.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"
#include "writ/types.h"

namespace writ::vocabulary {

// Output is DigestSize(rule()) bytes in the rule's canonical byte order:
// xxh3-128 as XXH128_canonicalFromHash (big-endian high then low), crc32c
// as the standard CRC-32C value big-endian, sha256 as defined by FIPS 180-4; a tree
// rule as its base hash's output over the root (below).
class Digester {
 public:
  static Result<std::unique_ptr<Digester>> Create(Rule rule);

  virtual ~Digester();
  Digester(const Digester&) = delete;
  Digester& operator=(const Digester&) = delete;

  virtual Rule rule() const = 0;
  virtual void Update(std::span<const uint8_t> bytes) = 0;
  // The digest of everything since Create/Reset. Call Reset before reuse.
  // Empty only if the underlying library failed, which never equals a digest.
  virtual std::vector<uint8_t> Finish() = 0;
  virtual void Reset() = 0;

 protected:
  Digester() = default;
};

Result<std::vector<uint8_t>> DigestOf(Rule rule, std::span<const uint8_t> bytes);

// Tree rules (docs/protocol.md, "Tree rules"): leaves are consecutive kTreeLeafBytes pieces
// of the delivery, the last may be shorter; D_i = H(leaf i); the digest is
// H(le64(total bytes) || D_0 || ... || D_{n-1}), H the base hash. No bytes: no leaves.
// Their Digester cuts the leaves itself; these are for digesting leaves in parallel.
inline constexpr uint64_t kTreeLeafBytes = uint64_t{1} << 20;
// The base hash of a tree rule; nothing for a sequential rule.
std::optional<Rule> TreeBase(Rule rule);
uint64_t TreeLeafCount(uint64_t total_bytes);
// D_i: the base hash of one leaf's bytes.
Result<std::vector<uint8_t>> TreeLeafDigest(Rule tree_rule, std::span<const uint8_t> leaf);
// The delivery's digest from every leaf's digest, in order.
Result<std::vector<uint8_t>> TreeRoot(Rule tree_rule, uint64_t total_bytes,
                                      const std::vector<std::vector<uint8_t>>& leaves);

}  // namespace writ::vocabulary
