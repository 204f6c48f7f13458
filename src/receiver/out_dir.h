// ReceiverOptions::out_dir (`writ serve --out DIR`): each retained delivery also appears as
// DIR/<name>, with its receipts beside it as DIR/<name>.receipts.json.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::receiver {

// The file name of delivery `id` in the output directory, one-to-one: bytes outside
// [A-Za-z0-9._-], a leading '.' and the '.' of a trailing ".receipts.json" are written %XX
// (so no name is "", ".", "..", hidden, holds a '/', or is another id's receipts file).
// InvalidArgument when the name would not fit in a directory entry.
Result<std::string> OutName(const std::string& id);

// At start: `dir` is a directory this process can create files in.
Status CheckOutDir(const std::string& dir);

using OutRead = std::function<Status(uint64_t offset, std::span<uint8_t> out)>;

// Publishes the `bytes` bytes read through `read` (in bounded blocks) as DIR/<name>
// atomically (an O_EXCL temporary in DIR, then a rename that never replaces); `sync`: the
// file is fsynced before and the directory after. A DIR/<name> already there is left as it
// is when it holds the same bytes; otherwise Refused ("conflicting id") naming it.
Status PublishOutPayload(const std::string& dir, const std::string& id, uint64_t bytes, bool sync,
                         const OutRead& read);

// Writes `receipts` (JSON texts) as the JSON array DIR/<name>.receipts.json, atomically,
// replacing an earlier one (the receipts of an earlier send of the same bytes).
Status PublishOutReceipts(const std::string& dir, const std::string& id,
                          const std::vector<std::string>& receipts, bool sync);

}  // namespace writ::receiver
