// The digest of each rule a delivery is validated against (writ/vocabulary.h names
// the rules), computed incrementally so a receiver can hash chunks as they are retained.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "writ/status.h"
#include "writ/types.h"

namespace writ::vocabulary {

// Output is DigestSize(rule()) bytes in the rule's canonical byte order:
// xxh3-128 as XXH128_canonicalFromHash (big-endian high then low), crc32c
// as the standard CRC-32C value big-endian, sha256 as defined by FIPS 180-4.
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

}  // namespace writ::vocabulary
