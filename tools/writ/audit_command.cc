// `writ audit BUNDLE.json [--json] [--key K] [--trust FILE]`: explains an evidence bundle
// (see shared/schemas/evidence-and-audit.md; revision 3, its embedded receipts, in
// docs/audit.md). Exit 0 whatever the audit concludes, 2 for an unreadable or malformed
// bundle.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "command.h"
#include "embedded_receipts.h"
#include "writ/audit.h"

namespace writ::cli {
namespace {

struct AuditOptions {
  std::string bundle;
  bool json = false;
  std::vector<std::string> keys;
  std::string trust;
};

// The report of the bundle in a file, or in stdin for "-", audited as it is read:
// neither the text nor every completion record is held whole, so a bundle of any size audits in
// bounded memory. Revision 3: a second streaming pass reads only the embedded receipts (stdin is
// held whole, the one input that cannot be read twice).
Result<audit::AuditReport> AuditFile(const std::string& path, const TrustedKeys& trusted) {
  std::stringstream in_memory;
  std::ifstream file;
  std::istream* in = &in_memory;
  if (path == "-") {
    in_memory << std::cin.rdbuf();
    if (std::cin.bad()) return Status::InvalidArgument("cannot read the bundle from stdin");
  } else {
    // A directory opens as a stream on Linux and fails only at the first read, with the
    // stream library's own words; it is named here as what it is.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return Status::InvalidArgument("cannot read " + path +
                                     ": it is a directory, not a bundle file");
    file.open(path, std::ios::binary);
    if (!file) return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
    in = &file;
  }
  auto report = audit::AuditStream(*in);
  if (report.status().code() == ErrorCode::kIo)
    return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  if (!report.ok()) return report;
  in->clear();
  in->seekg(0);
  WRIT_ASSIGN_OR_RETURN(EmbeddedEvidence embedded, CheckEmbeddedEvidence(*in, trusted));
  audit::ApplyReceiptChecks(*report, embedded.receipts, trusted.pinned(), embedded.certificate);
  return report;
}

int RunAudit(const AuditOptions& options) {
  TrustedKeys trusted;
  for (const std::string& key : options.keys) {
    if (Status added = AddTrustedKey(key, trusted); !added.ok()) return ReportError(added);
  }
  if (!options.trust.empty()) {
    if (Status added = AddTrustFile(options.trust, trusted); !added.ok()) return ReportError(added);
  }
  const auto report = AuditFile(options.bundle, trusted);
  if (!report.ok()) return ReportError(report.status());
  std::cout << (options.json ? audit::ReportToJson(*report) : audit::ReportToText(*report));
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void RegisterAudit(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "Explain an evidence bundle: what it establishes, what it does not, what to ask");
  cmd->add_option("BUNDLE", options->bundle, "evidence bundle (writ.evidence/1); - reads stdin")
      ->required();
  cmd->add_flag("--json", options->json, "print the writ.audit/1 report as JSON");
  cmd->add_option("--key", options->keys,
                  "pin a signer of the embedded receipts: a public key (hex, or a file holding "
                  "it); repeatable");
  cmd->add_option("--trust", options->trust,
                  "pin the signers named in FILE (one hex public key a line, # comments)");
  cmd->callback([options, &ctx] { ctx.exit_code = RunAudit(*options); });
}

WRIT_REGISTER_COMMAND(70, RegisterAudit);

}  // namespace writ::cli
