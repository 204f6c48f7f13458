// The vocabulary of the public API: digest rules, the evidence ladder's rungs,
// retention classes and completion levels (see docs/architecture.md). Their names,
// parsers and digest sizes: writ/vocabulary.h.
#pragma once

#include <cstdint>

namespace writ {

// The rule a whole delivery is validated against. The tree rules digest each 1 MiB leaf
// on its own (in parallel) and the delivery as the list of leaf digests (docs/protocol.md).
enum class Rule : uint8_t {
  kXxh3_128 = 1,
  kCrc32c = 2,
  kSha256 = 3,
  kXxh3_128Tree1MiB = 4,
  kSha256Tree1MiB = 5,
};

// The rungs a sender can wait for. `retained` is not a rung here: retention is
// orthogonal and named by a RetentionClass.
enum class Rung : uint8_t { kTransport = 1, kReceived = 2, kValidated = 3, kProcessed = 4 };

// The rung names receipts use: the four Rung values plus "retained".
enum class ReceiptRung : uint8_t { kTransport, kReceived, kValidated, kProcessed, kRetained };

// What a retained delivery survives (docs/architecture.md, "Retention classes").
enum class RetentionClass : uint8_t { kVolatile = 1, kProcessRestart = 2, kPowerLoss = 3 };

// The completion level an initiator's write relied on, weakest first (fi_cq(3)).
enum class CompletionLevel : uint8_t {
  kProviderDefault = 0,  // provider-specific; on tcp/rxm: handed to a socket
  kInject = 1,           // source buffer reusable
  kTransmit = 2,         // reached the target's transport
  kDelivery = 3,         // visible in the target buffer
};

}  // namespace writ
