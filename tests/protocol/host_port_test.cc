#include <gtest/gtest.h>

#include "protocol/control_channel.h"
#include "test_util.h"

namespace writ::protocol {
namespace {

TEST(ParseHostPort, Accepted) {
  const std::tuple<std::string_view, std::string, uint16_t> cases[] = {
      {"127.0.0.1:7000", "127.0.0.1", 7000},
      {"[::1]:7000", "::1", 7000},
      {"localhost:7000", "localhost", 7000},
      {"[fe80::1%lo]:1", "fe80::1%lo", 1},
      {"host.example.org:65535", "host.example.org", 65535},
      {"0.0.0.0:0", "0.0.0.0", 0},
  };
  for (const auto& [text, host, port] : cases) {
    auto r = ParseHostPort(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(r->first, host);
    EXPECT_EQ(r->second, port);
  }
}

TEST(ParseHostPort, Refused) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"", "expected HOST:PORT"},
      {"localhost", "expected HOST:PORT"},
      {":7000", "empty host"},
      {"localhost:", "empty port"},
      {"localhost:65536", "port must be a number from 0 to 65535"},
      {"localhost:-1", "port must be"},
      {"localhost:+1", "port must be"},
      {"localhost:70x", "port must be"},
      {"localhost:99999999999999999999", "port must be"},
      {"::1:7000", "an IPv6 address needs brackets"},
      {"[::1]7000", "expected \":PORT\" after ']'"},
      {"[::1]", "expected \":PORT\" after ']'"},
      {"[::1:7000", "missing ']'"},
      {"[]:7000", "brackets are for IPv6"},
      {"[localhost]:7000", "brackets are for IPv6"},
      {"local host:7000", "invalid character in host"},
      {"a/b:7000", "invalid character in host"},
  };
  for (const auto& [text, why] : cases) {
    auto r = ParseHostPort(text);
    EXPECT_ERROR(r, ErrorCode::kInvalidArgument, std::string(why));
  }
}

}  // namespace
}  // namespace writ::protocol
