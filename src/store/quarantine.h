// The data directory's quarantine: DIR/quarantine/ holds payload files the store could not
// explain or found corrupt (recovery, the scrub, a failed re-verification before an answer
// from the store). Nothing there is ever reported retained, and the store never deletes it:
// `writ store quarantine ls` lists it, `writ store quarantine purge` (which takes the
// directory's lock) deletes it. Each file NAME comes with NAME.why, one line of text saying
// which delivery it was and why it was moved there.
#pragma once

#include <string>
#include <vector>

#include "store/env.h"
#include "writ/status.h"

namespace writ::store {

inline constexpr const char* kQuarantineDir = "quarantine";
inline constexpr const char* kWhySuffix = ".why";

struct QuarantinedFile {
  std::string name;  // in DIR/quarantine/
  uint64_t bytes = 0;
  std::string why;
};

// Moves DIR/`location` (e.g. "payloads/p...dat") to DIR/quarantine/ with its reason, and
// syncs both directories. The file keeps its name.
Status MoveToQuarantine(Env* env, const std::string& dir, const std::string& location,
                        const std::string& why);
// What DIR/quarantine/ holds; empty when there is no quarantine.
Result<std::vector<QuarantinedFile>> ListQuarantine(Env* env, const std::string& dir);
// Deletes the named quarantined files (all when `names` is empty) with their reasons.
// The caller holds the directory's lock. NotFound names a file that is not there.
Status PurgeQuarantine(Env* env, const std::string& dir, const std::vector<std::string>& names);

}  // namespace writ::store
