// Revision 3 of the audit: the receipts an evidence bundle embeds (its top-level
// "receipts"), read in one streaming pass that keeps nothing else of the bundle, and
// verified here, where the receipt layer is linked: audit gets typed results only.
#pragma once

#include <istream>
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

// Each element of the bundle's "receipts", parsed strictly and verified (and checked
// against `trusted` when pinned). Malformed when the bundle is not JSON.
Result<std::vector<audit::ReceiptCheck>> CheckEmbeddedReceipts(std::istream& bundle,
                                                               const TrustedKeys& trusted);

}  // namespace writ::cli
