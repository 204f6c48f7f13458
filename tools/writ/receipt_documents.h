// The receipts in what writ writes: one receipt, an array of them (a `--out`
// .receipts.json file), a `send --json` / `query --json` / `store ls --json` document, or
// an evidence bundle (its "receipts"), each found with where it stands in the document.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "writ/receipt.h"
#include "writ/status.h"

namespace writ::cli {

struct FoundReceipt {
  std::string where;        // "receipt", "[2]", "receipts[0]", "deliveries[1].receipts[3]"
  Result<Receipt> receipt;  // strictly parsed, not yet verified
};

// Exactly one JSON document (receipt::ParseJsonWithoutDuplicateKeys), then its receipts
// in document order. Malformed when the text is not such a document.
Result<std::vector<FoundReceipt>> ReceiptsInDocument(std::string_view text);

// The receipts of an already parsed document (the same shapes).
Result<std::vector<FoundReceipt>> ReceiptsInJson(const nlohmann::json& document);

}  // namespace writ::cli
