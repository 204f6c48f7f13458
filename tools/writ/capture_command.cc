// writ capture --evidence OUT.json -- PROGRAM [ARGS...]: runs PROGRAM, unmodified, with the
// interposer (src/capture) preloaded, then writes what it observed of PROGRAM's libfabric
// (or libibverbs) calls as a writ.evidence/1 bundle. PROGRAM's exit status is writ's (128 + N when
// a signal N ended it); the bundle is written either way. SIGTERM and SIGHUP sent to writ are
// passed on to PROGRAM (writ then writes the bundle as for any end), and PROGRAM is
// killed if writ dies without doing so (SIGKILL): it never outlives the capture.
#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "capture_bundle.h"
#include "command.h"
#include "common/printable.h"

namespace writ::cli {
namespace {

struct CaptureOptions {
  std::string evidence;
  std::vector<std::string> command;
  bool keep_journals = false;
};

// Installed: PREFIX/bin/writ and PREFIX/LIBDIR/writ/; in the build tree:
// tools/writ/writ and src/capture/. WRIT_CAPTURE_LIBRARY overrides both.
Result<std::string> CaptureLibrary() {
  if (const char* given = std::getenv("WRIT_CAPTURE_LIBRARY"); given && *given)
    return std::string(given);
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return Status::Io("cannot find the writ executable");
  exe[n] = '\0';
  std::string dir(exe);
  dir.resize(dir.rfind('/'));
  for (const std::string& candidate : {dir + "/../" WRIT_INSTALL_LIBDIR "/writ/libwrit_capture.so",
                                       dir + "/../../src/capture/libwrit_capture.so"}) {
    if (access(candidate.c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return realpath(candidate.c_str(), real) ? std::string(real) : candidate;
    }
  }
  return Status::Io("the capture library libwrit_capture.so is not beside this writ (" + dir +
                    "/../" WRIT_INSTALL_LIBDIR "/writ/); set WRIT_CAPTURE_LIBRARY");
}

[[noreturn]] void ExecCaptured(const CaptureOptions& o, const std::string& library,
                               const std::string& journal_dir) {
  std::string preload = library;
  if (const char* earlier = std::getenv("LD_PRELOAD"); earlier && *earlier)
    preload += std::string(":") + earlier;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("WRIT_CAPTURE_DIR", journal_dir.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "writ: cannot run " << Printable(o.command[0]) << ": " << std::strerror(errno)
            << '\n';
  _exit(127);
}

volatile sig_atomic_t captured_child = 0;

void PassOnToChild(int signal) {
  if (captured_child > 0) kill(static_cast<pid_t>(captured_child), signal);
}

// Like system(3): the terminal's ^C and ^\ are the program's to handle; writ waits.
Result<int> RunAndWait(const CaptureOptions& o, const std::string& library,
                       const std::string& journal_dir, std::string& exit_text) {
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  struct sigaction pass_on {
  }, old_term{}, old_hup{};
  pass_on.sa_handler = PassOnToChild;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  // SIGTERM and SIGHUP wait, blocked, until the child's pid is known to the handler.
  sigset_t passed_on{}, old_mask{};
  sigemptyset(&passed_on);
  sigaddset(&passed_on, SIGTERM);
  sigaddset(&passed_on, SIGHUP);
  sigprocmask(SIG_BLOCK, &passed_on, &old_mask);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return Status::Io(std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    // Killed with writ; a writ that died before this line is seen as a new parent.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(128 + SIGKILL);
    ExecCaptured(o, library, journal_dir);
  }
  captured_child = child;
  sigaction(SIGTERM, &pass_on, &old_term);
  sigaction(SIGHUP, &pass_on, &old_hup);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  captured_child = 0;
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFSIGNALED(status)) {
    exit_text = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                strsignal(WTERMSIG(status)) + ")";
    return 128 + WTERMSIG(status);
  }
  exit_text = "exited " + std::to_string(WEXITSTATUS(status));
  return WEXITSTATUS(status);
}

std::vector<std::string> ReadJournals(const std::string& dir, bool remove) {
  std::vector<std::string> texts;
  DIR* d = opendir(dir.c_str());
  if (!d) return texts;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 7 || name.substr(name.size() - 6) != ".jsonl") continue;
    std::ifstream in(dir + "/" + name, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    texts.push_back(text.str());
    if (remove) unlink((dir + "/" + name).c_str());
  }
  closedir(d);
  if (remove) rmdir(dir.c_str());
  return texts;
}

Status WriteBundle(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::Io("cannot write the evidence to " + partial);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    return Status::Io("cannot write the evidence to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

int RunCapture(const CaptureOptions& o) {
  auto library = CaptureLibrary();
  if (!library.ok()) return ReportError(library.status());
  std::string journal_dir = o.evidence + ".journal-XXXXXX";
  if (!mkdtemp(journal_dir.data()))
    return ReportError(Status::Io("cannot create " + journal_dir + ": " + std::strerror(errno)));
  CaptureRun run{o.command, ""};
  auto exit_code = RunAndWait(o, *library, journal_dir, run.exit);
  if (!exit_code.ok()) return ReportError(exit_code.status());
  CaptureCounts counts;
  auto bundle = BuildCaptureBundle(ReadJournals(journal_dir, !o.keep_journals), run, counts);
  if (!bundle.ok()) return ReportError(bundle.status());
  if (Status written = WriteBundle(o.evidence, *bundle); !written.ok()) return ReportError(written);
  std::cerr << "writ capture: " << Printable(o.command[0]) << " " << run.exit << "; "
            << counts.processes << " process(es) used libfabric or libibverbs, " << counts.endpoints
            << " endpoint(s) or QP(s), " << counts.work_requests << " work request(s) posted, "
            << counts.completions << " completion(s) read (" << counts.errors << " error)"
            << " -> " << Printable(o.evidence) << '\n';
  return *exit_code;
}

void RegisterCapture(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<CaptureOptions>();
  CLI::App* cmd = app.add_subcommand(
      "capture",
      "Run a program and write what its libfabric or libibverbs calls did as an evidence "
      "bundle");
  cmd->add_option("--evidence", o->evidence, "write the writ.evidence/1 bundle to this file")
      ->required();
  cmd->add_flag("--keep-journals", o->keep_journals,
                "keep the per-process journals (EVIDENCE.journal-*/PID.jsonl)");
  cmd->add_option("PROGRAM", o->command, "-- PROGRAM [ARGS...]: run unmodified")->required();
  cmd->callback([o, &ctx] { ctx.exit_code = RunCapture(*o); });
}

}  // namespace

WRIT_REGISTER_COMMAND(75, RegisterCapture);

}  // namespace writ::cli
