#include "receipt_documents.h"

#include "receipt/strict_json.h"

namespace writ::cli {
namespace {

using json = nlohmann::json;

void AddReceipt(const json& value, std::string where, std::vector<FoundReceipt>& out) {
  out.push_back(FoundReceipt{std::move(where), ReceiptFromJson(value.dump())});
}

// A "receipts" member: every element is read as a receipt (junk is an invalid one).
bool AddReceiptsMember(const json& object, const std::string& prefix,
                       std::vector<FoundReceipt>& out) {
  auto it = object.find("receipts");
  if (it == object.end() || !it->is_array()) return false;
  for (size_t i = 0; i < it->size(); ++i)
    AddReceipt((*it)[i], prefix + "receipts[" + std::to_string(i) + "]", out);
  return true;
}

bool IsReceipt(const json& value) {
  return value.is_object() && value.contains("schema") && value["schema"] == kReceiptSchema;
}

// A document holding receipts: its own "receipts", and those of its "deliveries" (store ls).
bool AddHeldReceipts(const json& object, const std::string& prefix,
                     std::vector<FoundReceipt>& out) {
  bool holds = AddReceiptsMember(object, prefix, out);
  auto deliveries = object.find("deliveries");
  if (deliveries == object.end() || !deliveries->is_array()) return holds;
  for (size_t i = 0; i < deliveries->size(); ++i) {
    const json& d = (*deliveries)[i];
    if (d.is_object())
      holds |= AddReceiptsMember(d, prefix + "deliveries[" + std::to_string(i) + "].", out);
  }
  return holds;
}

}  // namespace

Result<std::vector<FoundReceipt>> ReceiptsInJson(const json& document) {
  std::vector<FoundReceipt> out;
  if (IsReceipt(document)) {
    AddReceipt(document, "receipt", out);
    return out;
  }
  if (document.is_array()) {
    // A receipts file; or the documents of a send of several files, each holding receipts.
    for (size_t i = 0; i < document.size(); ++i) {
      const json& element = document[i];
      const std::string where = "[" + std::to_string(i) + "]";
      if (element.is_object() && !element.contains("schema") && element.contains("receipts"))
        AddHeldReceipts(element, where + ".", out);
      else
        AddReceipt(element, where, out);
    }
    return out;
  }
  if (document.is_object() && AddHeldReceipts(document, "", out)) return out;
  // An evidence bundle without signed receipts holds none: that is an answer, not an error.
  if (document.is_object() && document.contains("schema") &&
      document["schema"] == "writ.evidence/1")
    return out;
  return Status::Malformed(
      "not a receipt, an array of receipts, or a document holding receipts (send --json, "
      "query --json, store ls --json, an evidence bundle)");
}

Result<std::vector<FoundReceipt>> ReceiptsInDocument(std::string_view text) {
  WRIT_ASSIGN_OR_RETURN(json document, receipt::ParseJsonWithoutDuplicateKeys(text, "document"));
  return ReceiptsInJson(document);
}

}  // namespace writ::cli
