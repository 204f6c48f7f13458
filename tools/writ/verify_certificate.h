// writ verify on a replicated:K certificate (receipt/certificate.h).
#pragma once

#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::cli {

// `expected_keys`: hex public keys (from --key, repeated, and --trust); empty: any.
int VerifyCertificateText(const std::string& text, const std::vector<std::string>& expected_keys,
                          bool json);

// The hex keys in a trust file: one per line; blank lines and # comments skipped.
Result<std::vector<std::string>> ReadTrustFile(const std::string& path);

}  // namespace writ::cli
