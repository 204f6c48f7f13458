// Revision 3 of the audit: the receipts an evidence bundle embeds (its top-level
// "receipts", and the members of its replicated:K "certificate"), read in one streaming pass that
// keeps nothing else of the bundle, and verified here, where the receipt layer is linked: audit
// gets typed results only.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "writ/audit.h"
#include "writ/status.h"

namespace writ::cli {

// The signers a bundle's receipts must have (--key, --trust); empty: any key they name.
struct TrustedKeys {
  std::set<std::string> keys;  // lower-case hex public keys
  bool pinned() const { return !keys.empty(); }
};

// Adds --key (hex, or a file holding it) and each key of --trust FILE (one per line,
// '#' comments) to `trusted`; InvalidArgument naming the bad one.
Status AddTrustedKey(const std::string& key_or_file, TrustedKeys& trusted);
Status AddTrustFile(const std::string& path, TrustedKeys& trusted);

// One receipt's JSON, parsed strictly and verified (and checked against `trusted` when
// pinned); `duplicate` names a key it repeats (it then does not verify).
audit::ReceiptCheck CheckReceiptJson(const nlohmann::json& element, const std::string& where,
                                     const std::string& duplicate, const TrustedKeys& trusted);

// A bundle's top-level "certificate" (writ.replicated/1): what it states and each member
// checked as a receipt (embedded_certificate.cc). `duplicate`: a key it repeats.
audit::CertificateCheck CheckCertificateJson(const nlohmann::json& certificate,
                                             const std::string& duplicate,
                                             const TrustedKeys& trusted);

struct EmbeddedEvidence {
  std::vector<audit::ReceiptCheck> receipts;           // each element of "receipts"
  std::optional<audit::CertificateCheck> certificate;  // when the bundle has one
};

// The bundle's "receipts" and "certificate", read in one streaming pass and checked.
// Malformed when the bundle is not JSON.
Result<EmbeddedEvidence> CheckEmbeddedEvidence(std::istream& bundle, const TrustedKeys& trusted);

}  // namespace writ::cli
