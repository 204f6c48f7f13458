// writ key show: the public key of an identity directory (a receiver's or a sender's).
#include <iostream>

#include "command.h"
#include "receipt/identity.h"

namespace writ::cli {
namespace {

int RunKeyShow(const std::string& dir) {
  auto identity = receipt::Identity::LoadOrCreate(dir);
  if (!identity.ok()) return ReportError(identity.status());
  std::cout << receipt::PublicKeyHex(identity->public_key()) << "  key id " << identity->key_id()
            << '\n';
  return kExitOk;
}

void RegisterKey(CLI::App& app, CommandContext& ctx) {
  CLI::App* key =
      app.add_subcommand("key", "Identities: Ed25519 keys that sign receipts and announces");
  key->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* show = key->add_subcommand("show", "Print the public key (created on first use)");
  show->add_option("--identity", *dir, "identity directory (e.g. DATA_DIR/identity)")->required();
  show->callback([dir, &ctx] { ctx.exit_code = RunKeyShow(*dir); });
}

}  // namespace

WRIT_REGISTER_COMMAND(90, RegisterKey);

}  // namespace writ::cli
