// An announce's signature in the group form (docs/protocol.md, "Announces signed
// together"): announces a sender starts together are signed once, over the root of a
// Merkle tree of their signing bytes (receipt/merkle.h's tree, as for receipts). The
// `signature` field then holds the group's Ed25519 signature over
// kAnnounceGroupSigningPrefix || root, the announce's leaf index and the group's size
// (u32 little-endian each), and its inclusion path: one 32-byte sibling hash per step,
// from the leaf upwards. A plain signature is the 64 bytes alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/messages.h"

namespace writ::protocol {

inline constexpr std::string_view kAnnounceGroupSigningPrefix = "writ-announce-group-v1";
// The signature, the index and the group's size, before the path.
inline constexpr size_t kAnnounceGroupHeaderBytes = kSignatureBytes + 8;
inline constexpr uint32_t kMaxAnnounceGroup = 65536;
inline constexpr size_t kMaxAnnounceGroupSteps = 16;  // log2(kMaxAnnounceGroup)

struct AnnounceGroupSignature {
  std::span<const uint8_t> signature;  // 64 bytes: over the group's root
  uint32_t index = 0;
  uint32_t leaves = 0;
  std::span<const uint8_t> siblings;  // 32 bytes a step
};

// The group form's parts; nullopt for a plain signature (64 bytes). Sizes are validate.cc's.
std::optional<AnnounceGroupSignature> ParseAnnounceGroup(std::span<const uint8_t> signature);
// The group form's signature field, without its path (the caller appends the siblings).
void EncodeAnnounceGroupHeader(std::vector<uint8_t>& out, std::span<const uint8_t> signature,
                               uint32_t index, uint32_t leaves);
// What the group's signature covers: the prefix's bytes, then the root's 32.
std::vector<uint8_t> AnnounceGroupSigningMessage(std::span<const uint8_t> root);

}  // namespace writ::protocol
