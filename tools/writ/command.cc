#include "command.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <vector>

#include "common/printable.h"
#include "fabric/provider.h"

namespace writ::cli {
namespace {

std::vector<std::pair<int, Registrar>>& Registry() {
  static std::vector<std::pair<int, Registrar>> registry;
  return registry;
}

}  // namespace

bool AddCommand(int order, Registrar registrar) {
  Registry().emplace_back(order, registrar);
  return true;
}

void RegisterAll(CLI::App& app, CommandContext& ctx) {
  auto& registry = Registry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [order, registrar] : registry) registrar(app, ctx);
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk: return kExitOk;
    case ErrorCode::kNotFound: return kExitNotFound;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kMalformed:
    // A local file or directory the command was given cannot be read, written or created
    // (FILE, --identity, --evidence, --data): the input is wrong, not the network.
    case ErrorCode::kIo: return kExitUsage;
    case ErrorCode::kRefused: return kExitRefused;
    case ErrorCode::kTransport:
    case ErrorCode::kTimeout:
    case ErrorCode::kCancelled: return kExitTransport;
    case ErrorCode::kValidation: return kExitValidation;
    case ErrorCode::kRetention: return kExitRetention;
    default: return kExitTransport;
  }
}

int ReportError(const Status& status) {
  // The message may quote ids, paths or fields from a peer or a file: shown escaped.
  std::cerr << "writ: " << Printable(status.message()) << '\n';
  return ExitCodeFor(status);
}

Status CheckProviderOffered(const std::string& provider) {
  auto offered = fabric::AvailableProviders();
  if (!offered.ok()) return Status::Ok();
  for (const auto& d : *offered) {
    if (d.provider == provider) return Status::Ok();
  }
  return Status::InvalidArgument("--provider " + provider + ": not offered on this machine (" +
                                 fabric::AvailableProviderNames() +
                                 " are; `writ providers` describes them)");
}

Result<uint64_t> ParseSize(std::string_view text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return Status::InvalidArgument("size too large: " + std::string(text));
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0)
    return Status::InvalidArgument("bad size '" + std::string(text) +
                                   "': expected e.g. 4096, 64KiB, 8MiB");
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit.empty() || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib")
    shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib")
    shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib")
    shift = 30;
  else if (unit == "t" || unit == "tb" || unit == "tib")
    shift = 40;
  else
    return Status::InvalidArgument("bad size unit in '" + std::string(text) + "'");
  if (shift && value > (UINT64_MAX >> shift))
    return Status::InvalidArgument("size too large: " + std::string(text));
  return value << shift;
}

}  // namespace writ::cli
