// writ verify: is this receipt signed by the key it names (or the key given), and
// internally coherent?
#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "common/printable.h"
#include "receipt/identity.h"
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
  auto path = std::make_shared<std::string>();
  auto key = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("verify", "Check a receipt's signature and internal consistency");
  cmd->add_option("RECEIPT", *path, "receipt JSON file")->required();
  cmd->add_option("--key", *key, "the issuer's public key (hex, or a file holding it)");
  cmd->callback([path, key, &ctx] { ctx.exit_code = RunVerify(*path, *key); });
}

}  // namespace

WRIT_REGISTER_COMMAND(80, RegisterVerify);

}  // namespace writ::cli
