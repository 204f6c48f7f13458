// What `serve --out DIR` published of a delivery (DIR/<name> and DIR/<name>.receipts.json,
// out_dir.h), when the delivery is gone: a removal or an expiry removes both files, and a
// file with no retained delivery behind it (left by a delivery removed while no serve ran,
// or a volatile one lost at a restart) is moved aside instead of blocking its id.
#pragma once

#include <cstdint>
#include <string>

#include "writ/status.h"

namespace writ::receiver {

// Removes DIR/<name> and DIR/<name>.receipts.json of delivery `id`. Returns the line to
// log ("" when neither was there); an error names the file that could not be removed.
Result<std::string> RemoveOutFiles(const std::string& dir, const std::string& id);

// Renames DIR/<name> and its receipts file to hidden names (".<name>.stale-<now_ms>",
// which no delivery's name can be: names never start with '.'), never replacing anything.
// Returns the line to log ("" when neither was there).
Result<std::string> SetAsideStaleOutFiles(const std::string& dir, const std::string& id,
                                          uint64_t now_ms);

}  // namespace writ::receiver
