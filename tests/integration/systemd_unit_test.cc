// packaging/systemd/writ-serve.service: systemd accepts the unit, and its ExecStart line,
// expanded as systemd expands it, runs a real `writ serve` that receives a delivery into
// the unit's state directory. systemd is not PID 1 here, so the sandboxing itself is
// checked only by `systemd-analyze verify`.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kUnit = std::string(WRIT_SOURCE_DIR) + "/packaging/systemd/writ-serve.service";
const std::string kInstalledBinary = "/usr/local/bin/writ";

struct Unit {
  std::string text;
  std::string exec_start;
  std::vector<std::string> state_directories;
  std::map<std::string, std::string> environment;  // Environment= lines
};

Unit ReadUnit() {
  Unit unit;
  std::ifstream in(kUnit);
  std::stringstream all;
  all << in.rdbuf();
  unit.text = all.str();
  std::istringstream lines(unit.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("ExecStart=", 0) == 0) unit.exec_start = line.substr(10);
    if (line.rfind("StateDirectory=", 0) == 0) {
      std::istringstream dirs(line.substr(15));
      for (std::string d; dirs >> d;) unit.state_directories.push_back(d);
    }
    if (line.rfind("Environment=", 0) == 0) {
      const std::string setting = line.substr(12);
      const size_t eq = setting.find('=');
      unit.environment[setting.substr(0, eq)] = setting.substr(eq + 1);
    }
  }
  return unit;
}

// ExecStart's words as systemd makes them: %S is the state root, ${VAR} one word, $VAR
// split into words (none when empty); the installed binary is the one under test.
std::vector<std::string> ExpandExecStart(const Unit& unit, const std::string& state_root,
                                         const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv;
  std::istringstream words(unit.exec_start);
  for (std::string word; words >> word;) {
    for (size_t at; (at = word.find("%S")) != std::string::npos;) word.replace(at, 2, state_root);
    if (word.rfind("${", 0) == 0 && word.back() == '}') {
      argv.push_back(env.at(word.substr(2, word.size() - 3)));
    } else if (word[0] == '$') {
      std::istringstream split(env.at(word.substr(1)));
      for (std::string part; split >> part;) argv.push_back(part);
    } else {
      argv.push_back(word == kInstalledBinary ? WritBinary() : word);
    }
  }
  return argv;
}

TEST(SystemdUnit, SystemdAnalyzeVerifiesTheUnitWithoutAWarning) {
  REQUIRE_OR_FAIL(access("/usr/bin/systemd-analyze", X_OK) == 0,
                  "systemd-analyze is missing (Debian package systemd)");
  Unit unit = ReadUnit();
  ASSERT_NE(unit.text.find("ExecStart=" + kInstalledBinary + " serve"), std::string::npos);
  // verify checks that the binary exists: point it at the one under test.
  TempDir dir;
  std::string text = unit.text;
  text.replace(text.find(kInstalledBinary), kInstalledBinary.size(), WritBinary());
  const std::string copy = dir.File("writ-serve.service");
  std::ofstream(copy) << text;
  auto proc = ChildProcess::Start({"/usr/bin/systemd-analyze", "verify", copy}, true);
  ASSERT_TRUE(proc.ok()) << proc.status().ToString();
  auto said = proc->ReadAll(60s);
  auto code = proc->Wait(60s);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << (said.ok() ? *said : "");
  EXPECT_EQ(said.ok() ? *said : "?", "") << "systemd-analyze warned about the unit";
}

// The shipped defaults: loopback until an operator names another address (with --allow),
// and an --out directory a named group may read (mode 0750, files 0640) but others not.
TEST(SystemdUnit, ListensOnLoopbackByDefaultAndSharesOutWithTheGroupWrit) {
  Unit unit = ReadUnit();
  ASSERT_TRUE(unit.environment.count("WRIT_LISTEN"));
  EXPECT_EQ(unit.environment["WRIT_LISTEN"].rfind("127.0.0.1:", 0), 0u)
      << "WRIT_LISTEN=" << unit.environment["WRIT_LISTEN"] << " must be a loopback address";
  EXPECT_NE(unit.text.find("\nGroup=writ\n"), std::string::npos);
  EXPECT_NE(unit.text.find("\nStateDirectoryMode=0750\n"), std::string::npos);
  EXPECT_NE(unit.text.find("\nUMask=0027\n"), std::string::npos);
  EXPECT_EQ(unit.text.find("\nDynamicUser=yes"), std::string::npos)
      << "a DynamicUser's state directory lies under /var/lib/private, closed to any group";
  std::ifstream sysusers(std::string(WRIT_SOURCE_DIR) + "/packaging/systemd/writ.sysusers");
  std::stringstream text;
  text << sysusers.rdbuf();
  EXPECT_NE(text.str().find("\nu writ -"), std::string::npos)
      << "writ.sysusers must create the user and group writ";
}

TEST(SystemdUnit, ItsExecStartServesIntoItsStateDirectoryAndStopsCleanlyOnSigterm) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  const Unit unit = ReadUnit();
  ASSERT_FALSE(unit.exec_start.empty());
  TempDir state;
  for (const auto& d : unit.state_directories) fs::create_directories(state.File(d));
  std::map<std::string, std::string> env = unit.environment;
  ASSERT_TRUE(env.count("WRIT_LISTEN"));
  env["WRIT_LISTEN"] = "127.0.0.1:0";  // what /etc/default/writ-serve would set
  env["WRIT_SERVE_ARGS"] = "--provider tcp";
  const std::string err = state.File("serve.err");
  auto serve = ChildProcess::Start(ExpandExecStart(unit, state.path(), env), false, err);
  ASSERT_TRUE(serve.ok()) << serve.status().ToString();
  auto line = serve->ReadLineStartingWith("writ: listening on ", 30s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  const std::string address = line->substr(19, line->find(' ', 19) - 19);

  const std::string file = state.File("payload.bin");
  WritePatternFile(file, 16, 3 << 20);
  CommandRun sent = RunWrit({"send", file, "--to", address, "--id", "unit-1", "--retention",
                             "power-loss", "--chunk-size", "1MiB", "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_EQ(sent.json["reached"]["retention"], "power-loss");
  EXPECT_EQ(fs::file_size(state.File("writ/out/unit-1")), 3u << 20) << "--out %S/writ/out";
  EXPECT_TRUE(fs::exists(state.File("writ/out/unit-1.receipts.json")));
  CommandRun listed = RunWrit({"store", "ls", "--data", state.File("writ/data"), "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  ASSERT_EQ(listed.json["deliveries"].size(), 1u) << listed.out;
  EXPECT_EQ(listed.json["deliveries"][0]["id"], "unit-1");

  serve->Kill(SIGTERM);  // the unit's KillSignal
  auto code = serve->Wait(30s);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << "SIGTERM must stop the serve cleanly (exit 0)";
}

}  // namespace
}  // namespace writ::testing
