#include "embedded_receipts.h"

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "receipt/identity.h"
#include "writ/receipt.h"

namespace writ::cli {
namespace {

using json = nlohmann::json;

// Builds the root's "receipts" and "certificate" values (and nothing else) while the whole
// document streams past; notes each receipt's first duplicated key, and the certificate's,
// which the built value would hide.
class ReceiptsCollector {
 public:
  bool null() {
    return Value([&](auto& p) { return p.null(); });
  }
  bool boolean(bool v) {
    return Value([&](auto& p) { return p.boolean(v); });
  }
  bool number_integer(json::number_integer_t v) {
    return Value([&](auto& p) { return p.number_integer(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Value([&](auto& p) { return p.number_unsigned(v); });
  }
  bool number_float(json::number_float_t v, const std::string& s) {
    return Value([&](auto& p) { return p.number_float(v, s); });
  }
  bool string(std::string& v) {
    return Value([&](auto& p) { return p.string(v); });
  }
  bool binary(json::binary_t& v) {
    return Value([&](auto& p) { return p.binary(v); });
  }
  bool start_object(std::size_t n) {
    if (capturing_) keys_.emplace_back();
    return Open([&](auto& p) { return p.start_object(n); });
  }
  bool start_array(std::size_t n) {
    if (capturing_) keys_.emplace_back();
    return Open([&](auto& p) { return p.start_array(n); });
  }
  bool end_object() {
    return Close([&](auto& p) { return p.end_object(); });
  }
  bool end_array() {
    return Close([&](auto& p) { return p.end_array(); });
  }
  bool key(std::string& k) {
    if (capturing_) {
      if (!keys_.back().insert(k).second) {
        if (target_ == &certificate_ && certificate_duplicate_.empty()) certificate_duplicate_ = k;
        if (target_ == &receipts_ && duplicates_.count(element_) == 0) duplicates_[element_] = k;
      }
      return dom_->key(k);
    }
    armed_ = nullptr;
    if (depth_ == 1 && k == "receipts") armed_ = &receipts_;
    if (depth_ == 1 && k == "certificate") armed_ = &certificate_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  json& receipts() { return receipts_; }
  const json& certificate() const { return certificate_; }
  const std::string& certificate_duplicate() const { return certificate_duplicate_; }
  const std::string& error() const { return error_; }
  const std::map<std::size_t, std::string>& duplicates() const { return duplicates_; }

 private:
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;

  template <typename F>
  bool Value(F f) {
    if (capturing_) {
      if (depth_ == capture_depth_ + 1) ++element_;
      return f(*dom_);
    }
    if (armed_ && depth_ == 1) armed_ = nullptr;  // a scalar: nothing embedded
    return true;
  }
  template <typename F>
  bool Open(F f) {
    if (!capturing_ && armed_ && depth_ == 1) {
      capturing_ = true;
      target_ = armed_;
      armed_ = nullptr;
      capture_depth_ = depth_;
      element_ = 0;
      *target_ = json();
      dom_ = std::make_unique<Dom>(*target_, false);
      keys_.emplace_back();
    } else if (capturing_ && depth_ == capture_depth_ + 1) {
      ++element_;
    }
    ++depth_;
    return capturing_ ? f(*dom_) : true;
  }
  template <typename F>
  bool Close(F f) {
    --depth_;
    if (!capturing_) return true;
    keys_.pop_back();
    const bool ok = f(*dom_);
    if (depth_ == capture_depth_) capturing_ = false;
    return ok;
  }

  std::size_t depth_ = 0, capture_depth_ = 0;
  json* armed_ = nullptr;   // the value the next root key's value is captured into
  json* target_ = nullptr;  // the value being captured
  bool capturing_ = false;
  std::size_t element_ = 0;  // 1-based while capturing: the element being read
  std::unique_ptr<Dom> dom_;
  std::vector<std::set<std::string>> keys_;
  std::map<std::size_t, std::string> duplicates_;
  json receipts_, certificate_;
  std::string certificate_duplicate_;
  std::string error_;
};

Status AddKeyText(const std::string& text, const std::string& source, TrustedKeys& trusted) {
  auto key = receipt::ParsePublicKeyHex(text);
  if (!key.ok()) return Status::InvalidArgument(source + ": " + key.status().message());
  trusted.keys.insert(receipt::PublicKeyHex(*key));
  return Status::Ok();
}

}  // namespace

audit::ReceiptCheck CheckReceiptJson(const nlohmann::json& element, const std::string& where,
                                     const std::string& duplicate, const TrustedKeys& trusted) {
  audit::ReceiptCheck check;
  check.where = where;
  if (!duplicate.empty()) {
    check.problem = duplicate + ": duplicate key";
    return check;
  }
  auto receipt = ReceiptFromJson(element.dump());
  if (!receipt.ok()) {
    check.problem = receipt.status().message();
    return check;
  }
  check.rung = std::string(ReceiptRungName(receipt->rung));
  check.delivery = receipt->delivery.id;
  check.bytes = receipt->delivery.bytes;
  check.observed_chunks = receipt->observed_chunks;
  check.rule = receipt->delivery.rule;
  check.digest = receipt->delivery.digest;
  check.failure_domain = receipt->failure_domain;
  if (receipt->retention) check.survives = audit::Survives::Parse(receipt->retention->survives);
  if (!receipt->signature) {
    check.state = audit::ReceiptCheck::State::kNotSigned;
    check.problem = "not signed";
    return check;
  }
  if (Status verified = VerifyReceipt(*receipt); !verified.ok()) {
    check.problem = verified.message();
    return check;
  }
  if (trusted.pinned() && trusted.keys.count(receipt->signature->public_key) == 0) {
    check.state = audit::ReceiptCheck::State::kUnpinned;
    check.problem = "signed by key " + receipt->signature->key_id + ", which is not pinned";
    return check;
  }
  check.state = audit::ReceiptCheck::State::kVerified;
  check.key_id = receipt->signature->key_id;
  return check;
}

Status AddTrustedKey(const std::string& key_or_file, TrustedKeys& trusted) {
  std::string text = key_or_file;
  if (std::ifstream in(key_or_file); in) in >> text;
  return AddKeyText(text, "--key", trusted);
}

Status AddTrustFile(const std::string& path, TrustedKeys& trusted) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("--trust: cannot read " + path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const size_t end = line.find_first_of(" \t#", start);
    WRIT_RETURN_IF_ERROR(AddKeyText(line.substr(start, end - start),
                                    "--trust " + path + " line " + std::to_string(n), trusted));
  }
  if (trusted.keys.empty()) return Status::InvalidArgument("--trust: " + path + " names no key");
  return Status::Ok();
}

Result<EmbeddedEvidence> CheckEmbeddedEvidence(std::istream& bundle, const TrustedKeys& trusted) {
  ReceiptsCollector collector;
  if (!json::sax_parse(bundle, &collector) || !collector.error().empty()) {
    return Status::Malformed("bundle: not valid JSON");
  }
  EmbeddedEvidence out;
  const json& receipts = collector.receipts();
  for (std::size_t i = 0; receipts.is_array() && i < receipts.size(); ++i) {
    auto dup = collector.duplicates().find(i + 1);
    out.receipts.push_back(CheckReceiptJson(receipts[i], "receipts[" + std::to_string(i) + "]",
                                            dup == collector.duplicates().end() ? "" : dup->second,
                                            trusted));
  }
  if (!collector.certificate().is_null())
    out.certificate =
        CheckCertificateJson(collector.certificate(), collector.certificate_duplicate(), trusted);
  return out;
}

}  // namespace writ::cli
