// The TCP control connection between a sender and a receiver: framed,
// validated messages with deadlines. The data path never touches it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/codec.h"
#include "protocol/limits.h"
#include "protocol/messages.h"
#include "protocol/socket.h"
#include "writ/status.h"

namespace writ::protocol {

// One thread may Send while another Receives; two concurrent Sends (or two
// Receives) would interleave frames and need the caller's own lock.
class ControlChannel {
 public:
  // Resolves `host` and connects to the first address that answers, within
  // `timeout` in total. Refused or unreachable: Transport; too slow: Timeout.
  static Result<ControlChannel> Connect(std::string host, uint16_t port,
                                        std::chrono::milliseconds timeout, Limits limits = {});
  // Wraps an already connected socket.
  static Result<ControlChannel> Adopt(Socket socket, Limits limits = {});

  ControlChannel(ControlChannel&&) noexcept = default;
  ControlChannel& operator=(ControlChannel&&) noexcept = default;

  // Validates, then writes the whole frame within the send timeout. An
  // invalid message is InvalidArgument and nothing is sent. While corked, the frame is
  // only queued (after the ones before it), to leave with them in one write at Uncork.
  Status Send(const Message& message);
  // Frames sent from now on wait for Uncork, which writes them all at once (one system
  // call for what a pass of the caller produced, instead of one per message). A transport
  // error of theirs is Uncork's.
  void Cork();
  Status Uncork();
  // The next message. Every complete frame one read brings is kept, and returned by the
  // calls that follow without another read; timeout 0 takes only what has arrived.
  // Timeout when none completes in time (bytes of a partial frame are kept for the next
  // call); Transport when the peer closed or
  // reset the connection (naming whether it was mid-frame); Malformed or
  // Unsupported when the peer sent something this build refuses, after which
  // the channel only returns that error.
  Result<Message> Receive(std::chrono::milliseconds timeout);

  // Stops both directions; a peer blocked in Receive sees the close.
  void Shutdown();

  int fd() const { return socket_.fd(); }
  // "127.0.0.1:7000" / "[::1]:7000".
  const std::string& peer() const { return peer_; }
  void set_send_timeout(std::chrono::milliseconds timeout) { send_timeout_ = timeout; }

 private:
  ControlChannel(Socket socket, Limits limits, std::string peer);
  // Writes out_ (`sending` names it in errors) and empties it.
  Status WriteOut(std::string_view sending);
  std::string ReceiveWhat() const;

  Socket socket_;
  Limits limits_;
  FrameReader reader_;
  std::string peer_;
  std::chrono::milliseconds send_timeout_{10000};
  std::vector<uint8_t> out_;  // frames not written yet (while corked), capacity reused
  size_t out_messages_ = 0;
  bool corked_ = false;
  bool drained_ = false;  // the last read returned less than it asked for
};

class ControlListener {
 public:
  // Binds and listens. `host` may be a name or literal, "" or "*" for every
  // local address; `port` 0 lets the kernel pick (see port()).
  static Result<ControlListener> Listen(std::string host, uint16_t port, Limits limits = {});

  ControlListener(ControlListener&&) noexcept = default;
  ControlListener& operator=(ControlListener&&) noexcept = default;

  uint16_t port() const { return port_; }
  // "127.0.0.1:41234"
  const std::string& address() const { return address_; }
  // Waits for one connection; Timeout when none arrives in time.
  Result<ControlChannel> Accept(std::chrono::milliseconds timeout);
  // Takes no more connections: an Accept waiting on another thread returns at once (an
  // error), and so does every later one.
  void Shutdown();
  int fd() const { return socket_.fd(); }

 private:
  ControlListener(Socket socket, Limits limits, uint16_t port, std::string address)
      : socket_(std::move(socket)), limits_(limits), port_(port), address_(std::move(address)) {}

  Socket socket_;
  Limits limits_;
  uint16_t port_ = 0;
  std::string address_;
};

// "127.0.0.1:7000", "[::1]:7000", "localhost:7000" -> host (without brackets)
// and port. Port 0 is accepted (listen: let the kernel pick).
Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view text);

}  // namespace writ::protocol
