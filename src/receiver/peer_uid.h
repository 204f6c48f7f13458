// Which local user is at the other end of a loopback TCP connection, read from
// /proc/net/tcp{,6} (the peer's socket is the entry whose local end is our remote end).
#pragma once

#include <sys/types.h>

#include "writ/status.h"

namespace writ::receiver {

// NotFound when the peer is not a socket of this host's network namespace.
Result<uid_t> LoopbackPeerUid(int connected_fd);

}  // namespace writ::receiver
