// How a `writ` subcommand plugs into the CLI: each *_command.cc defines a
// Register function and WRIT_REGISTER_COMMAND(order, fn) adds it to the app.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "writ/status.h"

namespace writ::cli {

// Exit codes of the CLI contract (shared/schemas/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitNotFound = 1,
  kExitUsage = 2,
  kExitRefused = 3,
  kExitTransport = 4,
  kExitValidation = 5,
  kExitRetention = 6,
};

// Maps a failed Status onto the contract's exit code.
int ExitCodeFor(const Status& status);

// Prints `writ: <what was wrong>` on stderr and returns the exit code for it.
int ReportError(const Status& status);

struct CommandContext {
  int exit_code = kExitOk;
};

using Registrar = void (*)(CLI::App& app, CommandContext& ctx);

bool AddCommand(int order, Registrar registrar);

// Registers every command, in order, on `app`.
void RegisterAll(CLI::App& app, CommandContext& ctx);

// Handles `writ help [SUBCOMMAND...]` (rewritten to `SUBCOMMAND... --help`), an empty
// line and an unknown subcommand (named, with the closest one). Returns the exit code
// when the line is answered here, -1 when CLI11 should parse `args`.
int PrepareArguments(CLI::App& app, std::vector<std::string>& args);
// " store ls" for `store ls --data`: the subcommands `args` name, from the start.
std::string SubcommandPath(CLI::App& app, const std::vector<std::string>& args);

// InvalidArgument naming what this machine offers when `provider` is not among them
// (a usage error); Ok when it is, or when libfabric cannot say.
Status CheckProviderOffered(const std::string& provider);

// Parses "4096", "64KiB", "8MiB", "1GiB" (also K/M/G, KB/MB/GB as binary units).
Result<uint64_t> ParseSize(std::string_view text);

}  // namespace writ::cli

#define WRIT_REGISTER_COMMAND(order, fn) \
  [[maybe_unused]] static const bool writ_registered_##fn = ::writ::cli::AddCommand(order, fn)
