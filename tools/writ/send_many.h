// `writ send FILE...` with several files (or a directory): separate deliveries over one
// session, up to --in-flight of them at once; one line per delivery in the order given,
// then a total (--json: an array of `writ send --json` documents, the total on stderr).
// The exit code is the worst (highest) of the deliveries'.
#pragma once

#include <string>
#include <vector>

#include "writ/sender.h"

namespace writ::cli {

struct SendManyRequest {
  std::vector<std::string> paths;  // expanded: a directory's regular files, by name
  SendOptions options;             // its id is unused: each delivery is named by its file
  uint32_t in_flight = 16;
  bool json = false;
  int64_t corrupt_chunk = -1;  // tests only
};

// The FILE arguments with each directory replaced by its regular files, sorted by name.
Result<std::vector<std::string>> ExpandSendPaths(const std::vector<std::string>& args);

int RunSendMany(const SendManyRequest& request);

}  // namespace writ::cli
