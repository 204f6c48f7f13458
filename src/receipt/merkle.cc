#include "receipt/merkle.h"

#include <openssl/sha.h>

#include <algorithm>
#include <array>

namespace writ::receipt {
namespace {

// SHA256_Init/Update/Final, deprecated in OpenSSL 3.0 but kept through 3.x: the state is
// on the stack. The EVP form allocates on every hash (3.0's EVP_DigestInit_ex frees and
// re-creates the provider's context each time), six times per receipt group of three.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
MerkleHash Sha256(uint8_t domain, std::string_view a, std::string_view b = {}) {
  SHA256_CTX ctx;
  MerkleHash out{};
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, &domain, 1);
  SHA256_Update(&ctx, a.data(), a.size());
  SHA256_Update(&ctx, b.data(), b.size());
  SHA256_Final(out.data(), &ctx);
  return out;
}
#pragma GCC diagnostic pop

std::string_view View(const MerkleHash& h) {
  return {reinterpret_cast<const char*>(h.data()), h.size()};
}

}  // namespace

MerkleHash LeafHash(uint64_t leaf_index, uint64_t leaves, std::string_view bytes) {
  std::array<char, 16> position{};
  for (int i = 0; i < 8; ++i) {
    position[7 - i] = static_cast<char>(leaf_index >> (8 * i));
    position[15 - i] = static_cast<char>(leaves >> (8 * i));
  }
  return Sha256(0x00, std::string_view(position.data(), position.size()), bytes);
}

MerkleHash NodeHash(const MerkleHash& left, const MerkleHash& right) {
  return Sha256(0x01, View(left), View(right));
}

std::vector<std::vector<MerkleHash>> MerkleLevels(std::vector<MerkleHash> leaves) {
  std::vector<std::vector<MerkleHash>> levels;
  size_t level_count = 1;
  for (size_t n = leaves.size(); n > 1; n = (n + 1) / 2) ++level_count;
  levels.reserve(level_count);  // an allocation a level, none more
  levels.push_back(std::move(leaves));
  while (levels.back().size() > 1) {
    const std::vector<MerkleHash>& below = levels.back();
    std::vector<MerkleHash> above;
    above.reserve((below.size() + 1) / 2);
    for (size_t i = 0; i < below.size(); i += 2) {
      above.push_back(i + 1 < below.size() ? NodeHash(below[i], below[i + 1]) : below[i]);
    }
    levels.push_back(std::move(above));
  }
  return levels;
}

std::vector<MerkleStep> InclusionPath(const std::vector<std::vector<MerkleHash>>& levels,
                                      uint64_t index) {
  std::vector<MerkleStep> path;
  path.reserve(levels.size());
  ForEachPathStep(levels, index, [&path](std::string_view side, const MerkleHash& sibling) {
    path.push_back({std::string(side), HashHex(sibling)});
  });
  return path;
}

std::vector<std::string> ExpectedSides(uint64_t index, uint64_t leaves) {
  std::vector<std::string> sides;
  for (uint64_t count = leaves; count > 1; count = (count + 1) / 2, index /= 2) {
    if ((index ^ 1) < count) sides.push_back(index % 2 == 1 ? "left" : "right");
  }
  return sides;
}

size_t PathSteps(uint64_t index, uint64_t leaves) {
  size_t steps = 0;
  for (uint64_t count = leaves; count > 1; count = (count + 1) / 2, index /= 2) {
    if ((index ^ 1) < count) ++steps;
  }
  return steps;
}

Result<MerkleHash> RootOfSiblings(const MerkleHash& leaf, uint64_t index, uint64_t leaves,
                                  std::span<const uint8_t> siblings) {
  const size_t steps = PathSteps(index, leaves);
  if (siblings.size() != steps * sizeof(MerkleHash)) {
    return Status::Validation("inclusion path of " + std::to_string(siblings.size()) +
                              " bytes, leaf " + std::to_string(index) + " of " +
                              std::to_string(leaves) + " has " + std::to_string(steps) +
                              " steps of 32");
  }
  MerkleHash running = leaf;
  MerkleHash sibling{};
  for (uint64_t count = leaves; count > 1; count = (count + 1) / 2, index /= 2) {
    if ((index ^ 1) >= count) continue;  // promoted: no sibling at this level
    std::copy_n(siblings.begin(), sibling.size(), sibling.begin());
    siblings = siblings.subspan(sibling.size());
    running = index % 2 == 1 ? NodeHash(sibling, running) : NodeHash(running, sibling);
  }
  return running;
}

Result<MerkleHash> RootOfPath(const MerkleHash& leaf, const std::vector<MerkleStep>& path) {
  MerkleHash running = leaf;
  for (size_t i = 0; i < path.size(); ++i) {
    WRIT_ASSIGN_OR_RETURN(
        MerkleHash sibling,
        ParseHashHex(path[i].hash, "signature.path[" + std::to_string(i) + "].hash"));
    running = path[i].side == "left" ? NodeHash(sibling, running) : NodeHash(running, sibling);
  }
  return running;
}

std::string GroupSigningMessage(const MerkleHash& root) {
  return std::string(kGroupSigningPrefix) + std::string(View(root));
}

void HashHexInto(const MerkleHash& hash, char (&out)[64]) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < hash.size(); ++i) {
    out[2 * i] = kDigits[hash[i] >> 4];
    out[2 * i + 1] = kDigits[hash[i] & 15];
  }
}

std::string HashHex(const MerkleHash& hash) {
  char hex[64];
  HashHexInto(hash, hex);
  return std::string(hex, sizeof hex);
}

Result<MerkleHash> ParseHashHex(const std::string& hex, const std::string& field) {
  if (hex.size() != 64) return Status::Validation(field + ": not 64 hex digits");
  MerkleHash out{};
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = hex[i];
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (v < 0) return Status::Validation(field + ": not lowercase hex");
    out[i / 2] = static_cast<uint8_t>(out[i / 2] << 4 | v);
  }
  return out;
}

}  // namespace writ::receipt
