// A small client of etcd's v3 API through its HTTP/JSON gateway (/v3/...), with libcurl:
// key-value puts, prefix ranges, deletes and leases (grant, keep-alive, revoke), as etcd
// defines them. docs/operating.md ("A cluster") says why the gateway and not gRPC.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "writ/status.h"

namespace writ::cluster {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t lease = 0;
};

class EtcdClient {
 public:
  // `url`: "http://HOST:PORT" of one etcd member's client endpoint. Checks the form only.
  static Result<EtcdClient> Open(std::string url,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5));

  const std::string& url() const { return url_; }

  // A lease of `ttl_seconds`; its id.
  Result<int64_t> GrantLease(int64_t ttl_seconds) const;
  // One keep-alive round; NotFound when the lease has expired.
  Status KeepAlive(int64_t lease) const;
  Status RevokeLease(int64_t lease) const;
  // `lease` 0: no lease.
  Status Put(const std::string& key, const std::string& value, int64_t lease = 0) const;
  Status Delete(const std::string& key) const;
  // Deletes `key`; true when this call deleted it (false: it was not there). Two callers
  // taking one key: exactly one gets true, which makes it a claim.
  Result<bool> Take(const std::string& key) const;
  // Every key starting with `prefix`, in key order.
  Result<std::vector<KeyValue>> Prefix(const std::string& prefix) const;

 private:
  EtcdClient(std::string url, std::chrono::milliseconds timeout)
      : url_(std::move(url)), timeout_(timeout) {}
  // POSTs `body` to url_ + path; the response body on HTTP 200.
  Result<std::string> Post(const std::string& path, const std::string& body) const;

  std::string url_;
  std::chrono::milliseconds timeout_;
};

// Standard base64 (RFC 4648), as the gateway carries keys and values.
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);

}  // namespace writ::cluster
