// Fault injection for tests and the CLI's hidden --test-corrupt-chunk: kept out of the
// public option structs. A corrupted chunk has one byte flipped after the digest was
// announced (so the receiver must refuse it); it always goes through staging, so the
// source file is never touched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "writ/sender.h"

namespace writ::sender {

struct TestSeams {
  // Every later delivery of `session` corrupts this chunk; nullopt stops it.
  static void CorruptChunk(Sender& session, std::optional<uint64_t> chunk);
  // writ::Send, corrupting `chunk`.
  static DeliveryOutcome SendCorrupting(const std::string& path, const SendOptions& options,
                                        uint64_t chunk);
};

}  // namespace writ::sender
