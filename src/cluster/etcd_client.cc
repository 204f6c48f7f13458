#include "cluster/etcd_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <charconv>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

namespace writ::cluster {
namespace {

using json = nlohmann::json;

struct CurlEasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

size_t AppendToString(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The range end that selects every key starting with `prefix` (etcd's "prefix + 1").
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto last = static_cast<unsigned char>(prefix.back());
    if (last < 0xff) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// The gateway writes int64 values as JSON strings; anything else reads as absent (0).
int64_t Int64Field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return 0;
  const std::string& text = it->get_ref<const std::string&>();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size() ? value : 0;
}

// A reply etcd should never give is the coordination service failing, as an unreachable
// one is (exit 4), not bad input from the user.
Status BadReply(const std::string& what, const std::string& why) {
  return Status::Transport("etcd " + what + ": malformed reply (" + why + ")");
}

Result<json> ParseReply(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return BadReply(what, "not a JSON object");
  return j;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status::Malformed("base64: length not a multiple of 4");
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Status::Malformed("base64: invalid characters");
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

Result<EtcdClient> EtcdClient::Open(std::string url, std::chrono::milliseconds timeout) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument(
        "--cluster: expected an etcd client URL such as "
        "http://127.0.0.1:2379, got '" +
        url + "'");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  InitCurlOnce();
  return EtcdClient(std::move(url), timeout);
}

Result<std::string> EtcdClient::Post(const std::string& path, const std::string& body) const {
  std::unique_ptr<CURL, CurlEasyDeleter> curl(curl_easy_init());
  if (!curl) return Status::Internal("curl_easy_init failed");
  std::unique_ptr<curl_slist, CurlListDeleter> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"));
  const std::string target = url_ + path;
  std::string reply;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, target.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendToString);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return Status::Transport("etcd at " + url_ + " is not reachable (" + path + ": " +
                             curl_easy_strerror(rc) + ")");
  }
  long http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  if (http != 200) {
    return Status::Transport("etcd at " + url_ + " answered HTTP " + std::to_string(http) + " to " +
                             path + ": " + reply.substr(0, 200));
  }
  return reply;
}

Result<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) const {
  WRIT_ASSIGN_OR_RETURN(std::string text,
                        Post("/v3/lease/grant", json{{"TTL", ttl_seconds}}.dump()));
  WRIT_ASSIGN_OR_RETURN(json j, ParseReply(text, "lease grant"));
  const int64_t id = Int64Field(j, "ID");
  if (id == 0) return BadReply("lease grant", "no lease id in " + text);
  return id;
}

Status EtcdClient::KeepAlive(int64_t lease) const {
  WRIT_ASSIGN_OR_RETURN(std::string text,
                        Post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()));
  WRIT_ASSIGN_OR_RETURN(json j, ParseReply(text, "lease keep-alive"));
  // The gateway streams: {"result": {"ID": ..., "TTL": ...}}; TTL absent or 0 once expired.
  const json& result = j.contains("result") ? j["result"] : j;
  if (Int64Field(result, "TTL") <= 0)
    return Status::NotFound("etcd lease " + std::to_string(lease) + " has expired");
  return Status::Ok();
}

Status EtcdClient::RevokeLease(int64_t lease) const {
  return Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump()).status();
}

Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) const {
  json body{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  return Post("/v3/kv/put", body.dump()).status();
}

Status EtcdClient::Delete(const std::string& key) const {
  return Post("/v3/kv/deleterange", json{{"key", Base64Encode(key)}}.dump()).status();
}

Result<bool> EtcdClient::Take(const std::string& key) const {
  WRIT_ASSIGN_OR_RETURN(std::string text,
                        Post("/v3/kv/deleterange", json{{"key", Base64Encode(key)}}.dump()));
  WRIT_ASSIGN_OR_RETURN(json j, ParseReply(text, "delete"));
  return Int64Field(j, "deleted") == 1;
}

Result<std::vector<KeyValue>> EtcdClient::Prefix(const std::string& prefix) const {
  json body{{"key", Base64Encode(prefix)}, {"range_end", Base64Encode(PrefixEnd(prefix))}};
  WRIT_ASSIGN_OR_RETURN(std::string text, Post("/v3/kv/range", body.dump()));
  WRIT_ASSIGN_OR_RETURN(json j, ParseReply(text, "range"));
  std::vector<KeyValue> out;
  auto kvs = j.find("kvs");
  if (kvs == j.end() || !kvs->is_array()) return out;
  for (const json& kv : *kvs) {
    if (!kv.is_object() || !kv.contains("key") || !kv["key"].is_string()) continue;
    KeyValue& parsed = out.emplace_back();
    auto key = Base64Decode(kv["key"].get<std::string>());
    if (!key.ok()) return BadReply("range", key.status().message());
    parsed.key = std::move(*key);
    if (kv.contains("value") && kv["value"].is_string()) {
      auto value = Base64Decode(kv["value"].get<std::string>());
      if (!value.ok()) return BadReply("range", value.status().message());
      parsed.value = std::move(*value);
    }
    parsed.lease = Int64Field(kv, "lease");
  }
  return out;
}

}  // namespace writ::cluster
