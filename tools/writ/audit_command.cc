// `writ audit BUNDLE.json [--json]`: explains an evidence bundle (see
// shared/schemas/evidence-and-audit.md). Exit 0 whatever the audit concludes,
// 2 for an unreadable or malformed bundle.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "command.h"
#include "writ/audit.h"

namespace writ::cli {
namespace {

struct AuditOptions {
  std::string bundle;
  bool json = false;
};

// The report of the bundle in a file, or in stdin for "-", audited as it is read:
// neither the text nor every completion record is held whole, so a bundle of any size
// audits in bounded memory.
Result<audit::AuditReport> AuditFile(const std::string& path) {
  if (path == "-") {
    auto report = audit::AuditStream(std::cin);
    if (report.status().code() == ErrorCode::kIo)
      return Status::InvalidArgument("cannot read the bundle from stdin");
    return report;
  }
  // A directory opens as a stream on Linux and fails only at the first read, with the
  // stream library's own words; it is named here as what it is.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::InvalidArgument("cannot read " + path +
                                   ": it is a directory, not a bundle file");
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  auto report = audit::AuditStream(file);
  if (report.status().code() == ErrorCode::kIo)
    return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  return report;
}

int RunAudit(const AuditOptions& options) {
  const auto report = AuditFile(options.bundle);
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
  cmd->callback([options, &ctx] { ctx.exit_code = RunAudit(*options); });
}

WRIT_REGISTER_COMMAND(70, RegisterAudit);

}  // namespace writ::cli
