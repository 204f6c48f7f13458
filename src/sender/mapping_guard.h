// Reading a file mapping that may shrink underneath: a read past the file's new end raises
// SIGBUS, which a guarded read turns into `false` instead of a crash. This lets the digest
// of a zero-copy delivery read the mapping the transport writes from, instead of a second
// copy of the file by pread (docs/architecture.md, "Source path").
#pragma once

#include <cstdint>
#include <span>

#include "vocabulary/digest.h"

namespace writ::sender {

// Installs writ's SIGBUS handler on first use, chained to the one it replaces (which still
// handles every SIGBUS outside a guarded read). False when it cannot be installed or another
// handler has replaced it since: the caller then reads by pread.
bool MappingGuardReady();

// Feeds `bytes`, part of a file mapping, to `digester` on this thread; false when a page of
// them lay past the file's end (the digester is then unusable). Needs MappingGuardReady().
bool GuardedUpdate(vocabulary::Digester& digester, std::span<const uint8_t> bytes);

}  // namespace writ::sender
