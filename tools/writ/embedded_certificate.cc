// R3-7 (docs/audit.md): an evidence bundle's replicated:K certificate, read leniently so
// that each member is judged on its own (a tampered member does not hide the others);
// `writ verify` reads the same document strictly (receipt/certificate.h).
#include "embedded_receipts.h"
#include "receipt/certificate.h"

namespace writ::cli {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

audit::CertificateCheck CheckCertificateJson(const json& certificate, const std::string& duplicate,
                                             const TrustedKeys& trusted) {
  audit::CertificateCheck out;
  if (!certificate.is_object()) {
    out.problem = "expected a JSON object";
    return out;
  }
  if (!duplicate.empty()) {
    out.problem = duplicate + ": duplicate key";
    return out;
  }
  if (StringField(certificate, "schema") != receipt::kCertificateSchema) {
    out.problem = std::string("schema: expected ") + receipt::kCertificateSchema;
    return out;
  }
  if (auto k = certificate.find("k"); k != certificate.end() && k->is_number_unsigned())
    out.k = k->get<uint64_t>();
  if (auto d = certificate.find("delivery"); d != certificate.end() && d->is_object()) {
    out.delivery = StringField(*d, "id");
    if (auto b = d->find("bytes"); b != d->end() && b->is_number_unsigned())
      out.bytes = b->get<uint64_t>();
    out.rule = StringField(*d, "rule");
    out.digest = StringField(*d, "digest");
  }
  auto members = certificate.find("members");
  if (members == certificate.end() || !members->is_array()) {
    out.problem = "members: expected array";
    return out;
  }
  for (size_t i = 0; i < members->size(); ++i)
    out.members.push_back(CheckReceiptJson(
        (*members)[i], "certificate.members[" + std::to_string(i) + "]", "", trusted));
  return out;
}

}  // namespace writ::cli
