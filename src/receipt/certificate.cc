#include "receipt/certificate.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "receipt/strict_json.h"
#include "writ/receipt.h"

namespace writ::receipt {
namespace {

using json = nlohmann::json;

constexpr std::string_view kCertificateFields[] = {
    "schema",  "retention", "k",         "delivery",           "member_retention",
    "members", "issued_at", "statement", "does_not_establish", "survives"};

bool SameDelivery(const DeliveryRef& a, const DeliveryRef& b) {
  return a.id == b.id && a.bytes == b.bytes && a.rule == b.rule && a.digest == b.digest;
}

std::string MemberName(size_t i) { return "members[" + std::to_string(i) + "]"; }

Status CheckMember(const ReplicatedCertificate& c, size_t i, std::set<std::string>& keys,
                   std::set<std::string>& domains) {
  const Receipt& m = c.members[i];
  const std::string at = MemberName(i);
  if (!m.signature) return Status::Validation(at + ": unsigned");
  if (Status s = VerifyReceipt(m); !s.ok()) return Status::Validation(at + ": " + s.message());
  if (m.rung != ReceiptRung::kRetained)
    return Status::Validation(at + ": a " + std::string(ReceiptRungName(m.rung)) +
                              " receipt, not retained");
  if (!SameDelivery(m.delivery, c.delivery)) {
    return Status::Validation(at + ": names another delivery (" + m.delivery.id + ", " +
                              std::to_string(m.delivery.bytes) + " bytes, " + m.delivery.rule +
                              " " + m.delivery.digest + ")");
  }
  if (!m.retention || m.retention->retention != c.member_retention)
    return Status::Validation(at + ": not retained as " + c.member_retention);
  if (!m.failure_domain) return Status::Validation(at + ": signs no failure domain");
  if (!keys.insert(m.signature->public_key).second)
    return Status::Validation(at + ": key " + m.signature->key_id + " already counted");
  if (!domains.insert(*m.failure_domain).second)
    return Status::Validation(at + ": failure domain '" + *m.failure_domain + "' already counted");
  return Status::Ok();
}

Status ReadDelivery(const json& j, DeliveryRef& d) {
  auto it = j.find("delivery");
  if (it == j.end() || !it->is_object()) return Status::Malformed("delivery: expected object");
  const json& o = *it;
  if (!o.contains("id") || !o["id"].is_string() || !o.contains("bytes") ||
      !o["bytes"].is_number_unsigned() || !o.contains("rule") || !o["rule"].is_string() ||
      !o.contains("digest") || !o["digest"].is_string()) {
    return Status::Malformed("delivery: needs id, bytes, rule and digest");
  }
  d.id = o["id"].get<std::string>();
  d.bytes = o["bytes"].get<uint64_t>();
  d.rule = o["rule"].get<std::string>();
  d.digest = o["digest"].get<std::string>();
  return Status::Ok();
}

Status ReadString(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    return Status::Malformed(std::string(key) + ": expected string");
  out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

std::string ReplicatedRetentionName(uint32_t k) { return "replicated:" + std::to_string(k); }

Result<uint32_t> ParseReplicatedRetention(std::string_view text) {
  constexpr std::string_view kPrefix = "replicated:";
  if (text.substr(0, kPrefix.size()) != kPrefix)
    return Status::InvalidArgument("expected replicated:K, got '" + std::string(text) + "'");
  const std::string_view digits = text.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 2 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return Status::InvalidArgument("replicated:K: K must be a number from 1 to 16");
  }
  const uint32_t k = static_cast<uint32_t>(std::stoul(std::string(digits)));
  if (k < 1 || k > 16) return Status::InvalidArgument("replicated:K: K must be from 1 to 16");
  return k;
}

ReplicatedCertificate MakeCertificate(std::vector<Receipt> members) {
  ReplicatedCertificate c;
  c.k = static_cast<uint32_t>(members.size());
  if (!members.empty()) {
    c.delivery = members.front().delivery;
    c.delivery.chunks = 0;
    c.delivery.chunk_size = 0;
    if (members.front().retention) c.member_retention = members.front().retention->retention;
  }
  c.members = std::move(members);
  c.issued_at = NowRfc3339();
  const std::string k = std::to_string(c.k);
  c.statement = k + " receivers with distinct keys in " + k +
                " distinct failure domains each signed that they retained this delivery (" +
                c.member_retention + ") after validating it";
  c.survives = "the loss of any " + std::to_string(c.k == 0 ? 0 : c.k - 1) +
               " of these receivers, by power cut or destruction, when their failure domains "
               "fail independently";
  c.does_not_establish =
      "independence of failures inside one domain or across domains that share a cause, that "
      "the domains were labelled truthfully by their operators, that a receiver did not lie, "
      "or that the copies still exist now";
  return c;
}

std::string CertificateToJson(const ReplicatedCertificate& c) {
  json members = json::array();
  for (const Receipt& m : c.members)
    members.push_back(json::parse(ReceiptToJson(m), nullptr, false));
  json j{{"schema", kCertificateSchema},
         {"retention", ReplicatedRetentionName(c.k)},
         {"k", c.k},
         {"delivery",
          {{"id", c.delivery.id},
           {"bytes", c.delivery.bytes},
           {"rule", c.delivery.rule},
           {"digest", c.delivery.digest}}},
         {"member_retention", c.member_retention},
         {"members", std::move(members)},
         {"issued_at", c.issued_at},
         {"statement", c.statement},
         {"survives", c.survives},
         {"does_not_establish", c.does_not_establish}};
  return j.dump();
}

bool IsCertificateJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() && j.contains("schema") && j["schema"] == kCertificateSchema;
}

Result<ReplicatedCertificate> CertificateFromJson(std::string_view text) {
  WRIT_ASSIGN_OR_RETURN(json j, ParseJsonWithoutDuplicateKeys(text, "certificate"));
  if (!j.is_object()) return Status::Malformed("certificate: expected a JSON object");
  WRIT_RETURN_IF_ERROR(CheckKnownFields(j, "", kCertificateFields));
  ReplicatedCertificate c;
  std::string schema, retention;
  WRIT_RETURN_IF_ERROR(ReadString(j, "schema", schema));
  if (schema != kCertificateSchema)
    return Status::Malformed("schema: expected " + std::string(kCertificateSchema));
  if (!j.contains("k") || !j["k"].is_number_unsigned())
    return Status::Malformed("k: expected unsigned integer");
  c.k = j["k"].get<uint32_t>();
  WRIT_RETURN_IF_ERROR(ReadString(j, "retention", retention));
  if (retention != ReplicatedRetentionName(c.k))
    return Status::Malformed("retention: '" + retention + "' does not match k");
  WRIT_RETURN_IF_ERROR(ReadDelivery(j, c.delivery));
  WRIT_RETURN_IF_ERROR(ReadString(j, "member_retention", c.member_retention));
  WRIT_RETURN_IF_ERROR(ReadString(j, "issued_at", c.issued_at));
  WRIT_RETURN_IF_ERROR(ReadString(j, "statement", c.statement));
  WRIT_RETURN_IF_ERROR(ReadString(j, "survives", c.survives));
  WRIT_RETURN_IF_ERROR(ReadString(j, "does_not_establish", c.does_not_establish));
  auto members = j.find("members");
  if (members == j.end() || !members->is_array())
    return Status::Malformed("members: expected array");
  for (size_t i = 0; i < members->size(); ++i) {
    auto m = ReceiptFromJson((*members)[i].dump());
    if (!m.ok()) return Status::Malformed(MemberName(i) + ": " + m.status().message());
    c.members.push_back(std::move(m).value());
  }
  return c;
}

Status VerifyCertificate(const ReplicatedCertificate& c,
                         const std::vector<std::string>& expected_keys) {
  if (c.k == 0) return Status::Validation("k: at least 1");
  if (c.members.size() != c.k) {
    return Status::Validation("replicated:" + std::to_string(c.k) + " needs " +
                              std::to_string(c.k) + " member receipts, it carries " +
                              std::to_string(c.members.size()));
  }
  std::set<std::string> keys, domains;
  for (size_t i = 0; i < c.members.size(); ++i) {
    WRIT_RETURN_IF_ERROR(CheckMember(c, i, keys, domains));
    if (expected_keys.empty()) continue;
    const std::string& key = c.members[i].signature->public_key;
    if (std::find(expected_keys.begin(), expected_keys.end(), key) == expected_keys.end()) {
      return Status::Validation(MemberName(i) + ": key " + c.members[i].signature->key_id +
                                " is not one of the expected keys");
    }
  }
  return Status::Ok();
}

}  // namespace writ::receipt
