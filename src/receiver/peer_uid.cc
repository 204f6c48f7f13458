#include "receiver/peer_uid.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace writ::receiver {
namespace {

// /proc/net/tcp writes an address as the hex of its bytes in memory order, 32 bits at a
// time, then ":PORT" in hex.
std::string ProcAddress(const sockaddr_storage& ss) {
  char out[64];
  if (ss.ss_family == AF_INET) {
    const auto& sin = reinterpret_cast<const sockaddr_in&>(ss);
    std::snprintf(out, sizeof out, "%08X:%04X", sin.sin_addr.s_addr, ntohs(sin.sin_port));
    return out;
  }
  const auto& sin6 = reinterpret_cast<const sockaddr_in6&>(ss);
  uint32_t words[4];
  std::memcpy(words, &sin6.sin6_addr, sizeof words);
  std::snprintf(out, sizeof out, "%08X%08X%08X%08X:%04X", words[0], words[1], words[2], words[3],
                ntohs(sin6.sin6_port));
  return out;
}

}  // namespace

Result<uid_t> LoopbackPeerUid(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return Status::Io("getsockname", errno);
  }
  len = sizeof remote;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &len) != 0) {
    return Status::Io("getpeername", errno);
  }
  const char* table = remote.ss_family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp";
  // The peer's socket: its local end is our remote end, its remote end our local end.
  const std::string peer_local = ProcAddress(remote);
  const std::string peer_remote = ProcAddress(local);
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, loc, rem, state, queues, timer, retrans;
    uid_t uid = 0;
    fields >> slot >> loc >> rem >> state >> queues >> timer >> retrans >> uid;
    if (loc == peer_local && rem == peer_remote) return uid;
  }
  return Status::NotFound("the control connection's peer is not a local socket");
}

}  // namespace writ::receiver
