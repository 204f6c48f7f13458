// `writ help [SUBCOMMAND...]` and unknown subcommands, before CLI11 parses the line.
#include <algorithm>
#include <iostream>
#include <numeric>

#include "command.h"
#include "common/printable.h"

namespace writ::cli {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> NamesOf(CLI::App& app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// "writ: unknown command 'sned'; did you mean 'send'?" and exit 2.
int Unknown(CLI::App& parent, const std::string& word, const std::string& path) {
  const std::vector<std::string> names = NamesOf(parent);
  std::string closest;
  size_t best = SIZE_MAX;
  for (const auto& name : names) {
    const size_t d = name.rfind(word, 0) == 0 ? 0 : EditDistance(word, name);
    if (d < best) best = d, closest = name;
  }
  std::string all;
  for (const auto& name : names) all += (all.empty() ? "" : ", ") + name;
  std::cerr << "writ: unknown command '" << Printable(path + word) << "'";
  if (!closest.empty() && best <= std::max<size_t>(2, closest.size() / 3))
    std::cerr << "; did you mean '" << path << closest << "'?";
  std::cerr << " (" << (path.empty() ? "commands" : path + "has") << ": " << all << ")\n";
  return kExitUsage;
}

// Follows subcommand names from args[first]; an unknown one where a subcommand is expected
// is reported (exit 2). Returns -1 when every name is known.
int CheckNames(CLI::App& app, const std::vector<std::string>& args, size_t first) {
  CLI::App* cur = &app;
  std::string path;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.empty() || word[0] == '-' || NamesOf(*cur).empty()) break;
    const auto names = NamesOf(*cur);
    if (std::find(names.begin(), names.end(), word) == names.end())
      return Unknown(*cur, word, path);
    cur = cur->get_subcommand(word);
    path += word + " ";
  }
  return -1;
}

}  // namespace

std::string SubcommandPath(CLI::App& app, const std::vector<std::string>& args) {
  std::string path;
  CLI::App* cur = &app;
  for (const auto& word : args) {
    const auto names = NamesOf(*cur);
    if (std::find(names.begin(), names.end(), word) == names.end()) break;
    cur = cur->get_subcommand(word);
    path += " " + word;
  }
  return path;
}

int PrepareArguments(CLI::App& app, std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << app.help() << "writ: a subcommand is required\n";
    return kExitUsage;
  }
  if (args[0] == "help") {
    args.erase(args.begin());
    if (args.empty()) {
      std::cout << app.help();
      return kExitOk;
    }
    if (int code = CheckNames(app, args, 0); code >= 0) return code;
    args.push_back("--help");
    return -1;
  }
  // An option before any command: CLI11 would only say that a subcommand is required.
  const std::string& first = args[0];
  if (first.size() > 1 && first[0] == '-' && first != "-h" && first != "--help" &&
      first != "--version") {
    std::cerr << "writ: unknown option '" << Printable(first)
              << "': options follow a command (see `writ help`)\n";
    return kExitUsage;
  }
  return CheckNames(app, args, 0);
}

}  // namespace writ::cli
