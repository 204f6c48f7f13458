// A replicated:K certificate: K signed `retained` receipts for one delivery, from K
// distinct receiver keys in K distinct signed failure domains. It carries no signature of
// its own: everything it claims is checked from its members (docs/retention.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "writ/receipt.h"
#include "writ/status.h"

namespace writ::receipt {

inline constexpr const char* kCertificateSchema = "writ.replicated/1";

struct ReplicatedCertificate {
  uint32_t k = 0;
  DeliveryRef delivery;
  std::string member_retention;  // the class every member retained (power-loss by default)
  std::vector<Receipt> members;  // the K retained receipts
  std::string issued_at;
  std::string statement;           // what K copies establish
  std::string survives;            // which failures it survives
  std::string does_not_establish;  // what it does not
};

// "replicated:K".
std::string ReplicatedRetentionName(uint32_t k);
// K from "replicated:K" (1 <= K <= 16); InvalidArgument otherwise.
Result<uint32_t> ParseReplicatedRetention(std::string_view text);

// A certificate over `members` (their first's delivery and class), with its sentences.
ReplicatedCertificate MakeCertificate(std::vector<Receipt> members);

std::string CertificateToJson(const ReplicatedCertificate& c);
// True when `json_text` is an object whose schema is kCertificateSchema.
bool IsCertificateJson(std::string_view json_text);
// Strict: unknown fields, wrong types or a member that is not a receipt are Malformed.
Result<ReplicatedCertificate> CertificateFromJson(std::string_view json_text);

// Every member verifies (consistency and signature) and is a `retained` receipt with a
// signed failure domain; all name this certificate's delivery (id, bytes, rule, digest)
// and class; exactly K members, K distinct keys, K distinct domains; with
// `expected_keys` (hex public keys) non-empty, every member's key is one of them.
// Validation errors name the member and what failed.
Status VerifyCertificate(const ReplicatedCertificate& c,
                         const std::vector<std::string>& expected_keys = {});

}  // namespace writ::receipt
