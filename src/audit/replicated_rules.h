// R3-7 (docs/audit.md): a claim that needs replicated:K is drawn from the members of the
// bundle's certificate (writ.replicated/1), never from a stated promise alone when the
// bundle embeds signed evidence.
#pragma once

#include <cstdint>
#include <optional>

#include "writ/audit.h"

namespace writ::audit::internal {

// K when `claim` needs replicated:K (`durable` surviving replicated:K, `copies` K).
std::optional<uint64_t> ReplicasNeeded(const ClaimVerdict& claim);

// Judges a supported claim needing `k` copies of its delivery (`bytes` in the bundle).
void JudgeReplicatedClaim(ClaimVerdict& claim, uint64_t k, uint64_t bytes,
                          const SignatureReport& signatures);

}  // namespace writ::audit::internal
