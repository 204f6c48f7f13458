// The Merkle tree of a group of receipts signed together (docs/protocol.md, "Group
// signatures"): domain-separated SHA-256, leaf = H(0x00 || be64(leaf_index) ||
// be64(leaves) || bytes), node = H(0x01 || left || right). The leaf binds the receipt's
// position and its group's size: neither can be changed to another pair whose path has
// the same shape. The last node of a level with an odd count is promoted to
// the next level unchanged (never duplicated: a duplicate would give two different
// groups the same root), so it has no step at that level.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "writ/receipt.h"

namespace writ::receipt {

using MerkleHash = std::array<uint8_t, 32>;

inline constexpr std::string_view kGroupSignatureAlgorithm = "ed25519-merkle-sha256";
inline constexpr std::string_view kGroupSigningPrefix = "writ-receipt-group-v2";

MerkleHash LeafHash(uint64_t leaf_index, uint64_t leaves, std::string_view bytes);
MerkleHash NodeHash(const MerkleHash& left, const MerkleHash& right);

// Every level of the tree over `leaves` (at least one): levels[0] is the leaves, the
// last level holds the root alone.
std::vector<std::vector<MerkleHash>> MerkleLevels(std::vector<MerkleHash> leaves);
// Calls `step(side, sibling)` for each step of leaf `index`'s inclusion path in the tree of
// `levels`, from the leaf upwards ("left": the sibling is on the left).
template <typename Step>
void ForEachPathStep(const std::vector<std::vector<MerkleHash>>& levels, uint64_t index,
                     const Step& step) {
  for (size_t level = 0; level + 1 < levels.size(); ++level, index /= 2) {
    const uint64_t sibling = index ^ 1;
    if (sibling >= levels[level].size()) continue;  // promoted: no sibling at this level
    step(std::string_view(index % 2 == 1 ? "left" : "right"), levels[level][sibling]);
  }
}
// The inclusion path of leaf `index` in the tree of `levels`, from the leaf upwards.
std::vector<MerkleStep> InclusionPath(const std::vector<std::vector<MerkleHash>>& levels,
                                      uint64_t index);
// The sides a path of leaf `index` among `leaves` must have ("left": the sibling is
// on the left), from the leaf upwards; one per level where the node has a sibling.
std::vector<std::string> ExpectedSides(uint64_t index, uint64_t leaves);
// The root `path` leads to from `leaf`; Validation naming the step when a hash is not
// 64 lowercase hex digits.
Result<MerkleHash> RootOfPath(const MerkleHash& leaf, const std::vector<MerkleStep>& path);

// Steps in leaf `index`'s inclusion path among `leaves`: the levels where it has a sibling.
size_t PathSteps(uint64_t index, uint64_t leaves);
// The root that `siblings` (32-byte hashes, from the leaf upwards, one per step: sides as
// ExpectedSides) lead to from `leaf`, leaf `index` of `leaves`; Validation when their count
// is not PathSteps.
Result<MerkleHash> RootOfSiblings(const MerkleHash& leaf, uint64_t index, uint64_t leaves,
                                  std::span<const uint8_t> siblings);

// What the group's Ed25519 signature covers: kGroupSigningPrefix || root.
std::string GroupSigningMessage(const MerkleHash& root);

std::string HashHex(const MerkleHash& hash);
// The same 64 digits into `out`, without a string of their own.
void HashHexInto(const MerkleHash& hash, char (&out)[64]);
// Validation "<field>: ..." unless 64 lowercase hex digits.
Result<MerkleHash> ParseHashHex(const std::string& hex, const std::string& field);

}  // namespace writ::receipt
