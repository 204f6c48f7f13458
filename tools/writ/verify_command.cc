// writ verify: is this receipt signed by the key it names (or the key given), and
// internally coherent?
#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "common/printable.h"
#include "receipt/certificate.h"
#include "receipt/identity.h"
#include "verify_certificate.h"
#include "writ/receipt.h"

namespace writ::cli {
namespace {

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// --key takes the hex public key, or a file holding it (as `writ key show` prints).
std::string KeyArgument(const std::string& key) {
  std::ifstream in(key);
  if (!in) return key;
  std::string first;
  in >> first;
  return first;
}

struct VerifyFlags {
  std::string path;
  std::vector<std::string> keys;  // --key, repeated (a certificate's members)
  std::string trust;              // --trust FILE: more expected keys
  bool json = false;
};

int RunVerify(const std::string& path, const std::string& key);

// A replicated:K certificate goes to verify_certificate.h; a receipt takes one --key.
int RunVerifyFlags(const VerifyFlags& f) {
  auto text = ReadAll(f.path);
  if (!text.ok()) return ReportError(text.status());
  if (receipt::IsCertificateJson(*text)) {
    std::vector<std::string> expected;
    for (const std::string& k : f.keys) expected.push_back(KeyArgument(k));
    if (!f.trust.empty()) {
      auto trusted = ReadTrustFile(f.trust);
      if (!trusted.ok()) return ReportError(trusted.status());
      expected.insert(expected.end(), trusted->begin(), trusted->end());
    }
    return VerifyCertificateText(*text, expected, f.json);
  }
  if (f.keys.size() > 1 || !f.trust.empty() || f.json) {
    return ReportError(Status::InvalidArgument(
        "a receipt takes one --key; --key repeated, --trust and --json are for a replicated:K "
        "certificate"));
  }
  return RunVerify(f.path, f.keys.empty() ? "" : f.keys.front());
}

int RunVerify(const std::string& path, const std::string& key) {
  auto text = ReadAll(path);
  if (!text.ok()) return ReportError(text.status());
  auto receipt = ReceiptFromJson(*text);
  if (!receipt.ok()) {
    std::cerr << "writ: invalid receipt: " << Printable(receipt.status().message()) << '\n';
    return kExitValidation;
  }
  const std::string pinned = key.empty() ? "" : KeyArgument(key);
  if (!pinned.empty()) {
    auto parsed = receipt::ParsePublicKeyHex(pinned);
    if (!parsed.ok())
      return ReportError(Status::InvalidArgument("--key: " + parsed.status().message()));
  }
  Status verified = VerifyReceipt(*receipt, pinned);
  if (!verified.ok()) {
    std::cerr << "writ: invalid receipt: " << Printable(verified.message()) << '\n';
    return kExitValidation;
  }
  const DeliveryRef& d = receipt->delivery;
  std::cout << "valid: " << ReceiptRungName(receipt->rung) << " receipt for " << Printable(d.id)
            << " (" << d.bytes << " bytes, " << Printable(d.rule) << " " << Printable(d.digest)
            << "), issued by " << Printable(receipt->issuer) << ", signed by key "
            << Printable(receipt->signature->key_id)
            << (key.empty() ? " (the key it names; pass --key to pin the issuer)"
                            : " (the key given)")
            << '\n';
  if (const ReceiptSignature& sig = *receipt->signature; !sig.root.empty()) {
    std::cout << "group: receipt " << sig.leaf_index + 1 << " of " << sig.leaves
              << " signed together (one signature over their Merkle root " << sig.root
              << "; its path checked)\n";
  }
  auto rule = ParseRule(d.rule);  // known: the receipt is consistent
  if (rule.ok() && !RuleCaveat(*rule).empty()) std::cout << "note: " << RuleCaveat(*rule) << '\n';
  return kExitOk;
}

void RegisterVerify(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<VerifyFlags>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a receipt's (or a replicated:K certificate's) signatures and consistency");
  cmd->add_option("RECEIPT", f->path, "receipt or replicated:K certificate JSON file")->required();
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
