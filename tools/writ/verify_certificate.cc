#include "verify_certificate.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/printable.h"
#include "receipt/certificate.h"
#include "receipt/identity.h"

namespace writ::cli {
namespace {

void PrintCertificate(const receipt::ReplicatedCertificate& c, bool pinned) {
  const DeliveryRef& d = c.delivery;
  std::cout << "valid: " << receipt::ReplicatedRetentionName(c.k) << " certificate for "
            << Printable(d.id) << " (" << d.bytes << " bytes, " << Printable(d.rule) << " "
            << Printable(d.digest) << "): " << c.k << " retained (" << Printable(c.member_retention)
            << ") receipts from " << c.k << " distinct keys in " << c.k
            << " distinct signed failure domains"
            << (pinned ? ", every key one of those expected"
                       : " (pass --key or --trust to pin the receivers)")
            << '\n';
  for (const Receipt& m : c.members) {
    std::cout << "  member: " << Printable(m.issuer) << ", domain " << Printable(*m.failure_domain)
              << ", key " << Printable(m.signature->key_id) << '\n';
  }
  std::cout << "survives: " << Printable(c.survives) << '\n'
            << "does not establish: " << Printable(c.does_not_establish) << '\n';
}

nlohmann::json CertificateReport(const receipt::ReplicatedCertificate& c, bool pinned) {
  nlohmann::json members = nlohmann::json::array();
  for (const Receipt& m : c.members) {
    members.push_back({{"issuer", m.issuer},
                       {"failure_domain", *m.failure_domain},
                       {"key_id", m.signature->key_id},
                       {"public_key", m.signature->public_key},
                       {"retention", m.retention->retention}});
  }
  return {{"valid", true},
          {"kind", "certificate"},
          {"delivery",
           {{"id", c.delivery.id},
            {"bytes", c.delivery.bytes},
            {"rule", c.delivery.rule},
            {"digest", c.delivery.digest}}},
          {"reached",
           {{"rung", "retained"},
            {"retention", receipt::ReplicatedRetentionName(c.k)},
            {"member_retention", c.member_retention}}},
          {"keys_pinned", pinned},
          {"members", std::move(members)},
          {"survives", c.survives},
          {"does_not_establish", c.does_not_establish}};
}

}  // namespace

Result<std::vector<std::string>> ReadTrustFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("--trust: cannot read " + path);
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const std::string key = line.substr(start, line.find_first_of(" \t#", start) - start);
    if (auto parsed = receipt::ParsePublicKeyHex(key); !parsed.ok())
      return Status::InvalidArgument("--trust: " + path + ": " + parsed.status().message());
    keys.push_back(key);
  }
  return keys;
}

int VerifyCertificateText(const std::string& text, const std::vector<std::string>& expected_keys,
                          bool json) {
  auto certificate = receipt::CertificateFromJson(text);
  if (!certificate.ok()) {
    std::cerr << "writ: invalid certificate: " << Printable(certificate.status().message()) << '\n';
    return kExitValidation;
  }
  for (const std::string& key : expected_keys) {
    if (auto parsed = receipt::ParsePublicKeyHex(key); !parsed.ok())
      return ReportError(Status::InvalidArgument("--key: " + parsed.status().message()));
  }
  if (Status s = receipt::VerifyCertificate(*certificate, expected_keys); !s.ok()) {
    std::cerr << "writ: invalid certificate: " << Printable(s.message()) << '\n';
    return kExitValidation;
  }
  if (json) {
    std::cout << CertificateReport(*certificate, !expected_keys.empty()).dump(2) << std::endl;
  } else {
    PrintCertificate(*certificate, !expected_keys.empty());
  }
  return kExitOk;
}

}  // namespace writ::cli
