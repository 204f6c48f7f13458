// writ: one-sided RDMA deliveries with honest receipts.
#include <iostream>

#include "command.h"
#include "writ/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "writ: moves data with one-sided RDMA writes and tells the truth about what happened to it"};
  app.set_version_flag("--version", "writ " + std::string(writ::VersionString()));
  app.require_subcommand(1);
  writ::cli::CommandContext ctx;
  writ::cli::RegisterAll(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "writ: " << e.what() << '\n';
    return writ::cli::kExitUsage;
  }
  return ctx.exit_code;
}
