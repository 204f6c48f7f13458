// `writ send FILE --retention replicated:K` (--cluster URL or --to A,B,C): the CLI side of
// cluster/replicated_send.h.
#pragma once

#include <string>

#include "writ/sender.h"

namespace writ::cli {

struct ReplicatedSendRequest {
  std::string file;
  SendOptions options;    // from the ordinary send flags, without --retention
  std::string retention;  // "replicated:K"
  std::string replica_retention = "power-loss";
  std::string cluster;          // etcd URL, or
  std::string to;               // A,B,C
  std::string certificate;      // write the certificate here
  std::string evidence;         // write one evidence bundle of every replica and the certificate
  uint32_t stall_seconds = 10;  // a replica without progress this long is replaced
  bool json = false;
};

// True when `retention` names replicated:K (the send takes this path).
bool IsReplicatedRetention(const std::string& retention);

int RunReplicatedSend(const ReplicatedSendRequest& request);

}  // namespace writ::cli
