// writ: one-sided RDMA deliveries with honest receipts.
#include <iostream>

#include "command.h"
#include "fabric/psm_stand_ins.h"
#include "writ/version.h"

int main(int argc, char** argv) {
  // This program alone: no other library shares its process (psm_stand_ins.h).
  writ::fabric::EnablePsmStandIns();
  CLI::App app{
      "writ: moves data with one-sided RDMA writes and tells the truth about what happened to it",
      "writ"};
  app.set_version_flag("--version", "writ " + std::string(writ::VersionString()));
  app.require_subcommand(1);
  app.footer(
      "`writ help SUBCOMMAND` or `writ SUBCOMMAND --help` describes one; docs/cli.md is "
      "the reference.");
  writ::cli::CommandContext ctx;
  writ::cli::RegisterAll(app, ctx);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (int code = writ::cli::PrepareArguments(app, args); code >= 0) return code;
  std::vector<const char*> rewritten{argv[0]};
  for (const auto& arg : args) rewritten.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(rewritten.size()), const_cast<char**>(rewritten.data()));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "writ: " << e.what() << " (see `writ help" << writ::cli::SubcommandPath(app, args)
              << "`)\n";
    return writ::cli::kExitUsage;
  }
  return ctx.exit_code;
}
