#include "protocol/announce_group.h"

#include "protocol/wire.h"

namespace writ::protocol {

std::optional<AnnounceGroupSignature> ParseAnnounceGroup(std::span<const uint8_t> signature) {
  if (signature.size() <= kAnnounceGroupHeaderBytes) return std::nullopt;
  AnnounceGroupSignature group;
  group.signature = signature.first(kSignatureBytes);
  group.index = LoadLe32(signature.data() + kSignatureBytes);
  group.leaves = LoadLe32(signature.data() + kSignatureBytes + 4);
  group.siblings = signature.subspan(kAnnounceGroupHeaderBytes);
  return group;
}

void EncodeAnnounceGroupHeader(std::vector<uint8_t>& out, std::span<const uint8_t> signature,
                               uint32_t index, uint32_t leaves) {
  out.assign(signature.begin(), signature.end());
  out.resize(kAnnounceGroupHeaderBytes);
  StoreLe32(out.data() + kSignatureBytes, index);
  StoreLe32(out.data() + kSignatureBytes + 4, leaves);
}

std::vector<uint8_t> AnnounceGroupSigningMessage(std::span<const uint8_t> root) {
  std::vector<uint8_t> message(kAnnounceGroupSigningPrefix.begin(),
                               kAnnounceGroupSigningPrefix.end());
  message.insert(message.end(), root.begin(), root.end());
  return message;
}

}  // namespace writ::protocol
