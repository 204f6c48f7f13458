#include <charconv>
#include <string>

#include "protocol/control_channel.h"

namespace writ::protocol {
namespace {

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("address \"" + std::string(text) + "\": " + std::string(why));
}

}  // namespace

Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad(text, "missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(text, "expected \":PORT\" after ']'");
    }
    port = text.substr(close + 2);
    if (host.find(':') == std::string_view::npos) {
      return Bad(text, "brackets are for IPv6 addresses");
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "expected HOST:PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Bad(text, "an IPv6 address needs brackets: [ADDRESS]:PORT");
    }
  }
  if (host.empty()) return Bad(text, "empty host");
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f ||
        c == '[' || c == ']' || c == '/') {
      return Bad(text, "invalid character in host");
    }
  }
  if (port.empty()) return Bad(text, "empty port");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return Bad(text, "port must be a number from 0 to 65535");
  }
  return std::pair<std::string, uint16_t>(std::string(host), static_cast<uint16_t>(value));
}

}  // namespace writ::protocol
