#include "vocabulary/digest.h"

#include <string>

#include "vocabulary/digesters.h"
#include "writ/vocabulary.h"

namespace writ::vocabulary {

Digester::~Digester() = default;

Result<std::unique_ptr<Digester>> Digester::Create(Rule rule) {
  switch (rule) {
    case Rule::kXxh3_128: return MakeXxh3Digester();
    case Rule::kCrc32c: return MakeCrc32cDigester();
    case Rule::kSha256: return MakeSha256Digester();
    case Rule::kXxh3_128Tree1MiB:
    case Rule::kSha256Tree1MiB: return MakeTreeDigester(rule);
  }
  return Status::InvalidArgument("digest: unknown rule " + std::to_string(static_cast<int>(rule)));
}

Result<std::vector<uint8_t>> DigestOf(Rule rule, std::span<const uint8_t> bytes) {
  WRIT_ASSIGN_OR_RETURN(auto digester, Digester::Create(rule));
  digester->Update(bytes);
  std::vector<uint8_t> digest = digester->Finish();
  if (digest.size() != DigestSize(rule)) {
    return Status::Internal("digest: " + std::string(RuleName(rule)) + " computation failed");
  }
  return digest;
}

}  // namespace writ::vocabulary
