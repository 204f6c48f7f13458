// `writ audit BUNDLE.json [--json]`: explains an evidence bundle (see
// shared/schemas/evidence-and-audit.md). Exit 0 whatever the audit concludes,
// 2 for an unreadable or malformed bundle.
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

// The bundle parsed as it is read from a file, or from stdin for "-": the text is
// never held whole, so memory is the typed bundle and the report (issue 18).
Result<audit::EvidenceBundle> ReadBundle(const std::string& path) {
  if (path == "-") {
    auto bundle = audit::ParseBundle(std::cin);
    if (bundle.status().code() == ErrorCode::kIo)
      return Status::InvalidArgument("cannot read the bundle from stdin");
    return bundle;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  auto bundle = audit::ParseBundle(file);
  if (bundle.status().code() == ErrorCode::kIo)
    return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  return bundle;
}

int RunAudit(const AuditOptions& options) {
  auto bundle = ReadBundle(options.bundle);
  if (!bundle.ok()) return ReportError(bundle.status());
  const audit::AuditReport report = audit::Audit(*bundle);
  std::cout << (options.json ? audit::ReportToJson(report) : audit::ReportToText(report));
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
