// writ verify: is each receipt in a file signed by the key it names (or the key given),
// and internally coherent? The file is anything writ writes that holds receipts.
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "command.h"
#include "common/printable.h"
#include "receipt/certificate.h"
#include "receipt/identity.h"
#include "receipt_documents.h"
#include "verify_certificate.h"
#include "writ/receipt.h"

namespace writ::cli {
namespace {

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// --key takes the hex public key, or a file holding it (as `writ key show` prints); the
// result is the key's one spelling (lower-case hex), the one receipts carry.
Result<std::string> PinnedKey(const std::string& key) {
  if (key.empty()) return std::string();
  std::string text = key;
  if (std::ifstream in(key); in) in >> text;
  auto parsed = receipt::ParsePublicKeyHex(text);
  if (!parsed.ok()) return Status::InvalidArgument("--key: " + parsed.status().message());
  return receipt::PublicKeyHex(*parsed);
}

void PrintValid(const Receipt& receipt, bool pinned) {
  const DeliveryRef& d = receipt.delivery;
  std::cout << "valid: " << ReceiptRungName(receipt.rung) << " receipt for " << Printable(d.id)
            << " (" << d.bytes << " bytes, " << Printable(d.rule) << " " << Printable(d.digest)
            << "), issued by " << Printable(receipt.issuer) << ", signed by key "
            << Printable(receipt.signature->key_id)
            << (pinned ? " (the key given)" : " (the key it names; pass --key to pin the issuer)")
            << '\n';
  if (const ReceiptSignature& sig = *receipt.signature; !sig.root.empty()) {
    std::cout << "group: receipt " << sig.leaf_index + 1 << " of " << sig.leaves
              << " signed together (one signature over their Merkle root " << sig.root
              << "; its path checked)\n";
  }
  auto rule = ParseRule(d.rule);  // known: the receipt is consistent
  if (rule.ok() && !RuleCaveat(*rule).empty()) std::cout << "note: " << RuleCaveat(*rule) << '\n';
}

// Reports one receipt; true when it verifies.
bool CheckOne(const FoundReceipt& found, const std::string& pinned, const std::string& label) {
  Status verified =
      found.receipt.ok() ? VerifyReceipt(*found.receipt, pinned) : found.receipt.status();
  if (!verified.ok()) {
    // One receipt: the error alone, on stderr; several: one line each in the report.
    (label.empty() ? std::cerr << "writ: " : std::cout << label)
        << "invalid receipt: " << Printable(verified.message()) << '\n';
    return false;
  }
  std::cout << label;
  PrintValid(*found.receipt, !pinned.empty());
  return true;
}

int RunVerify(const std::string& path, const std::string& key) {
  auto text = ReadAll(path);
  if (!text.ok()) return ReportError(text.status());
  auto pinned = PinnedKey(key);
  if (!pinned.ok()) return ReportError(pinned.status());
  auto found = ReceiptsInDocument(*text);
  if (!found.ok()) {
    std::cerr << "writ: invalid receipt: " << Printable(found.status().message()) << '\n';
    return kExitValidation;
  }
  if (found->empty()) {
    std::cerr << "writ: " << Printable(path) << " holds no receipts: nothing to verify\n";
    return kExitValidation;
  }
  const bool one = found->size() == 1 && found->front().where == "receipt";
  size_t valid = 0;
  for (const FoundReceipt& f : *found) {
    const std::string label = one ? "" : Printable(f.where) + ": ";
    valid += CheckOne(f, *pinned, label) ? 1 : 0;
  }
  if (!one) std::cout << valid << " of " << found->size() << " receipts valid\n";
  if (!one && valid != found->size())
    std::cerr << "writ: " << found->size() - valid << " of " << found->size()
              << " receipts invalid\n";
  return valid == found->size() ? kExitOk : kExitValidation;
}

struct VerifyFlags {
  std::string path;
  std::vector<std::string> keys;  // --key, repeated (a certificate's members)
  std::string trust;              // --trust FILE: more expected keys
  bool json = false;
};

// A replicated:K certificate goes to verify_certificate.h; receipts take one --key.
int RunVerifyFlags(const VerifyFlags& f) {
  auto text = ReadAll(f.path);
  if (!text.ok()) return ReportError(text.status());
  if (receipt::IsCertificateJson(*text)) {
    std::vector<std::string> expected;
    for (const std::string& k : f.keys) {
      auto pinned = PinnedKey(k);
      if (!pinned.ok()) return ReportError(pinned.status());
      expected.push_back(*pinned);
    }
    if (!f.trust.empty()) {
      auto trusted = ReadTrustFile(f.trust);
      if (!trusted.ok()) return ReportError(trusted.status());
      expected.insert(expected.end(), trusted->begin(), trusted->end());
    }
    return VerifyCertificateText(*text, expected, f.json);
  }
  if (f.keys.size() > 1 || !f.trust.empty() || f.json) {
    return ReportError(Status::InvalidArgument(
        "receipts take one --key; --key repeated, --trust and --json are for a replicated:K "
        "certificate"));
  }
  return RunVerify(f.path, f.keys.empty() ? "" : f.keys.front());
}

void RegisterVerify(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<VerifyFlags>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check the signature and consistency of every receipt in a file, or of a replicated:K "
      "certificate");
  cmd->add_option("FILE", f->path,
                  "a receipt, an array of receipts (--out's .receipts.json), a send/query/store "
                  "ls --json document, an evidence bundle or a replicated:K certificate")
      ->required();
  cmd->add_option("--key", f->keys,
                  "the issuer's public key (hex, or a file holding it); for a certificate, "
                  "repeat it: every member's key must be one of them");
  cmd->add_option("--trust", f->trust,
                  "certificate: a file of expected receiver keys (hex, one a line)");
  cmd->add_flag("--json", f->json, "certificate: print one JSON document");
  cmd->callback([f, &ctx] { ctx.exit_code = RunVerifyFlags(*f); });
}

}  // namespace

WRIT_REGISTER_COMMAND(80, RegisterVerify);

}  // namespace writ::cli
