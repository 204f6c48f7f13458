// writ capture of fi_pingpong over tcp;ofi_rxm, client and server captured separately: the
// work requests and completions in each bundle against the iteration count, the audit of
// it (transport completions only), and a program killed mid-run still leaving its bundle.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "journal.h"
#include "requirement.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kIterations = 25;
constexpr const char* kPingpongProvider = "tcp;ofi_rxm";

bool HavePingpong() { return access("/usr/bin/fi_pingpong", X_OK) == 0; }

// A TCP port free now on loopback (fi_pingpong's out-of-band control port).
int CaptureFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(a.sin_port);
}

json ReadBundle(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, false);
}

size_t CountRequests(const json& bundle, const std::string& op, int64_t bytes = -1) {
  size_t n = 0;
  for (const json& wr : bundle["capture"]["work_requests"])
    if (wr["operation"] == op && (bytes < 0 || wr["bytes"] == bytes)) ++n;
  return n;
}

std::vector<std::string> Pingpong(const std::string& evidence, int port, bool client) {
  std::vector<std::string> args{"capture",
                                "--evidence",
                                evidence,
                                "--",
                                "fi_pingpong",
                                "-p",
                                kPingpongProvider,
                                "-e",
                                "rdm",
                                "-I",
                                std::to_string(kIterations),
                                "-S",
                                "64"};
  if (client) {
    args.insert(args.end(), {"-P", std::to_string(port), "127.0.0.1"});
  } else {
    args.insert(args.end(), {"-B", std::to_string(port)});
  }
  return args;
}

// What each side's bundle must hold: kIterations messages of 64 bytes sent; a receive
// posted for each message and one more (fi_pingpong keeps one posted ahead, the
// address exchange is one 4-byte message each way); every completion a success matched
// to its request.
void ExpectPingpongSide(const json& bundle, const std::string& side) {
  ASSERT_TRUE(bundle.is_object()) << side;
  EXPECT_EQ(bundle["schema"], "writ.evidence/1");
  EXPECT_EQ(CountRequests(bundle, "send", 64), static_cast<size_t>(kIterations)) << side;
  EXPECT_EQ(CountRequests(bundle, "send", 4), 1u) << side << ": the address exchange";
  EXPECT_EQ(CountRequests(bundle, "recv"), static_cast<size_t>(kIterations) + 1) << side;
  const json& records = bundle["work_completions"];
  EXPECT_EQ(records.size(), 2u * kIterations + 2) << side;
  size_t receives = 0;
  for (const json& r : records) {
    EXPECT_EQ(r["status"], "success") << side << ": " << r.dump();
    receives += r["opcode"] == "recv";
  }
  EXPECT_EQ(receives, static_cast<size_t>(kIterations) + 1) << side;
  EXPECT_EQ(bundle["capture"]["unmatched_completions"], 0) << side;
  EXPECT_EQ(bundle["capture"]["exit"], "exited 0") << side;
  const json& c = bundle["context"];
  EXPECT_EQ(c["transport"], "tcp") << c.dump();
  EXPECT_EQ(c["operation"], "send") << c.dump();
  EXPECT_EQ(c["memory_type"], "dram") << c.dump();
  EXPECT_TRUE(c["completion_level"].is_null()) << "fi_pingpong asks for no level: " << c.dump();
  EXPECT_NE(c["software_release"].get<std::string>().find("libfabric 1."), std::string::npos);
  EXPECT_EQ(bundle["capture"]["providers"], json::array({kPingpongProvider}));
}

TEST(Capture, PingpongClientAndServerAreCountedAndAudited) {
  REQUIRE_OR_FAIL(HavePingpong(), "fi_pingpong (libfabric-bin) is not installed");
  TempDir dir;
  const int port = CaptureFreePort();
  ASSERT_NE(port, 0);
  const std::string server_evidence = dir.File("server.json");
  const std::string client_evidence = dir.File("client.json");
  auto server = StartWrit(Pingpong(server_evidence, port, false), dir.File("server.err"));
  ASSERT_TRUE(server);
  CommandRun client;
  for (int attempt = 0; attempt < 50; ++attempt) {  // until the server listens
    std::this_thread::sleep_for(100ms);
    client = RunWrit(Pingpong(client_evidence, port, true));
    if (client.exit_code == 0) break;
  }
  ASSERT_EQ(client.exit_code, 0) << client.err;
  CommandRun served = FinishWrit(*server, dir.File("server.err"));
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_NE(client.err.find("writ capture: fi_pingpong exited 0"), std::string::npos) << client.err;

  ExpectPingpongSide(ReadBundle(client_evidence), "client");
  ExpectPingpongSide(ReadBundle(server_evidence), "server");

  CommandRun audited = RunWrit({"audit", client_evidence});
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  const std::string records = std::to_string(2 * kIterations + 2);
  EXPECT_NE(audited.out.find("No signatures"), std::string::npos) << audited.out;
  EXPECT_NE(audited.out.find(records + " completion records (" + records +
                             " successful, 0 failed), 0 logical deliveries"),
            std::string::npos)
      << audited.out;
  EXPECT_EQ(audited.out.find("Claims"), std::string::npos) << "capture states no claim";
  CommandRun as_json = RunWrit({"audit", client_evidence, "--json"});
  ASSERT_EQ(as_json.exit_code, 0);
  EXPECT_EQ(as_json.json["deliveries"], json::array()) << "nothing validated or retained";
  EXPECT_EQ(as_json.json["claims"], json::array());
}

TEST(Capture, AProgramKilledMidRunLeavesWhatWasCaptured) {
  REQUIRE_OR_FAIL(HavePingpong(), "fi_pingpong (libfabric-bin) is not installed");
  TempDir dir;
  const int port = CaptureFreePort();
  // The server is bounded by `timeout` too, in case this test dies before stopping it.
  auto server = StartWrit({"capture", "--evidence", dir.File("server.json"), "--", "timeout", "-s",
                           "KILL", "20", "fi_pingpong", "-p", kPingpongProvider, "-e", "rdm", "-I",
                           "1000000", "-S", "64", "-B", std::to_string(port)},
                          dir.File("server.err"));
  ASSERT_TRUE(server);
  // The client is killed by SIGKILL mid-run (seconds into 1,000,000 iterations: more than any
  // machine runs in that time, so the kill always comes first): no exit handler of its runs.
  // `timeout` is a process in between that forks fi_pingpong (and, using no libfabric, leaves
  // no journal). A try that ends otherwise found the server not listening yet; one killed
  // before its first message (a loaded machine, a sanitized writ) is tried again, given longer.
  const std::string evidence = dir.File("killed.json");
  CommandRun run;
  int kill_after_s = 2;
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::this_thread::sleep_for(100ms);
    run = RunWrit({"capture",
                   "--evidence",
                   evidence,
                   "--",
                   "timeout",
                   "-s",
                   "KILL",
                   std::to_string(kill_after_s),
                   "fi_pingpong",
                   "-p",
                   kPingpongProvider,
                   "-e",
                   "rdm",
                   "-I",
                   "1000000",
                   "-S",
                   "64",
                   "-P",
                   std::to_string(port),
                   "127.0.0.1"});
    if (run.exit_code != 137) continue;
    const json tried = ReadBundle(evidence);
    if ((tried.is_object() && CountRequests(tried, "send", 64) >= 1u) || kill_after_s >= 16) break;
    kill_after_s *= 2;
  }
  // SIGTERM, which writ passes on to `timeout` and `timeout` to fi_pingpong: a SIGKILL would
  // end writ and `timeout` (PR_SET_PDEATHSIG) and orphan fi_pingpong, polling on a core.
  server->Kill(SIGTERM);
  EXPECT_TRUE(server->Wait(20s).ok()) << "the captured server did not stop on SIGTERM";
  EXPECT_EQ(run.exit_code, 137) << run.err;
  const json bundle = ReadBundle(evidence);
  ASSERT_TRUE(bundle.is_object()) << run.err;
  // timeout kills its whole process group, itself included.
  EXPECT_EQ(bundle["capture"]["exit"], "killed by signal 9 (Killed)");
  ASSERT_EQ(bundle["capture"]["processes"].size(), 1u) << bundle["capture"].dump();
  EXPECT_NE(bundle["capture"]["processes"][0]["program"].get<std::string>().find("fi_pingpong"),
            std::string::npos);
  EXPECT_GE(CountRequests(bundle, "send", 64), 1u) << "the messages sent before the kill";
  EXPECT_GE(bundle["work_completions"].size(), 1u);
  EXPECT_EQ(bundle["context"]["transport"], "tcp");
}

// The captured program: a shell that writes its pid (which `exec` keeps) to the FIFO
// `fifo`, then sleeps.
std::vector<std::string> CaptureSleeper(const std::string& evidence, const std::string& fifo) {
  return {"capture",
          "--evidence",
          evidence,
          "--",
          "sh",
          "-c",
          "echo $$ > '" + fifo + "'; exec sleep 600"};
}

// A new FIFO at `path`, its read end opened before any writer, non-blocking: it polls ready
// once something is written (a FIFO whose writer came and went would poll ready at once, so
// each program gets its own). -1 on failure.
int OpenPidFifo(const std::string& path) {
  if (mkfifo(path.c_str(), 0600) != 0) return -1;
  return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

// The pid the program writes to `fifo` (opened before it starts), once written; 0 when
// nothing came within 10 s.
pid_t ProgramPidFrom(int fifo) {
  pollfd written{fifo, POLLIN, 0};
  if (poll(&written, 1, 10000) <= 0) return 0;
  char text[32] = {};
  const ssize_t n = read(fifo, text, sizeof text - 1);
  return n > 0 ? static_cast<pid_t>(std::atoi(text)) : 0;
}

// Waits up to 10 s for `pid` to end (a pidfd reads ready once the process has terminated,
// zombie or reaped); true when it did.
bool ProcessGone(pid_t pid) {
  // The syscall itself: glibc 2.36's <sys/pidfd.h> declares pidfd_open without C linkage.
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // ended and reaped already
  pollfd ended{fd, POLLIN, 0};
  const int ready = poll(&ended, 1, 10000);
  close(fd);
  return ready > 0;
}

// SIGTERM to `writ capture` ends its program and the bundle is still written; SIGKILL, which
// writ cannot pass on, ends the program too (it never outlives the capture).
TEST(Capture, StoppingTheCaptureStopsItsProgram) {
  TempDir dir;
  const std::string evidence = dir.File("stopped.json");
  const std::string fifo = dir.File("stopped.fifo");
  const int pids = OpenPidFifo(fifo);
  ASSERT_GE(pids, 0) << std::strerror(errno);
  auto capture = StartWrit(CaptureSleeper(evidence, fifo), dir.File("stopped.err"));
  ASSERT_TRUE(capture);
  const pid_t program = ProgramPidFrom(pids);
  close(pids);
  ASSERT_GT(program, 0) << "writ capture started no program";
  capture->Kill(SIGTERM);
  auto ended = capture->Wait(20s);
  ASSERT_TRUE(ended.ok()) << ended.status().message();
  EXPECT_EQ(*ended, 128 + SIGTERM);
  EXPECT_TRUE(ProcessGone(program)) << "the program outlived writ capture's SIGTERM";
  const json bundle = ReadBundle(evidence);
  ASSERT_TRUE(bundle.is_object());
  EXPECT_EQ(bundle["capture"]["exit"], "killed by signal 15 (Terminated)");

  const std::string killed_fifo = dir.File("killed.fifo");
  const int killed_pids = OpenPidFifo(killed_fifo);
  ASSERT_GE(killed_pids, 0) << std::strerror(errno);
  auto killed =
      StartWrit(CaptureSleeper(dir.File("killed.json"), killed_fifo), dir.File("killed.err"));
  ASSERT_TRUE(killed);
  const pid_t orphan = ProgramPidFrom(killed_pids);
  close(killed_pids);
  ASSERT_GT(orphan, 0) << "writ capture started no program";
  killed->Kill(SIGKILL);
  ASSERT_TRUE(killed->Wait(20s).ok());
  EXPECT_TRUE(ProcessGone(orphan)) << "the program outlived a SIGKILLed writ capture";
}

TEST(Capture, AnErrorCompletionKeepsOnlyItsValidFields) {
  TempDir dir;
  const std::string evidence = dir.File("cancelled.json");
  CommandRun run = RunWrit({"capture", "--evidence", evidence, "--", CANCELLED_RECEIVE});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const json bundle = ReadBundle(evidence);
  ASSERT_TRUE(bundle.is_object()) << run.err;
  ASSERT_EQ(CountRequests(bundle, "recv"), 1u) << bundle.dump(2);
  ASSERT_EQ(bundle["work_completions"].size(), 1u) << bundle.dump(2);
  const json& record = bundle["work_completions"][0];
  EXPECT_EQ(record["wr_id"], bundle["capture"]["work_requests"][0]["wr_id"]);
  EXPECT_EQ(record["status"], "FI_ECANCELED");
  EXPECT_EQ(record["vendor_err"], -125) << "the provider's prov_errno";
  EXPECT_EQ(record["provider_error"], "Operation canceled");
  EXPECT_FALSE(record.contains("opcode")) << "not valid on an error entry: " << record.dump();
  EXPECT_FALSE(record.contains("byte_len")) << "not valid on an error entry: " << record.dump();

  CommandRun audited = RunWrit({"audit", evidence});
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  EXPECT_NE(audited.out.find("1 completion record (0 successful, 1 failed)"), std::string::npos)
      << audited.out;
}

// The records of every posted request and completion are written without printf
// (journal.c): the same text printf's %p, %lld and %llu give, and a line too long for its
// buffer ends short instead of overflowing.
TEST(CaptureJournal, LinesAreWhatPrintfWrites) {
  auto line = [](auto append) {
    writ_line l;
    l.n = 0;
    append(l);
    return std::string(l.text, l.n);
  };
  auto printed = [](const char* format, auto value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return std::string(text);
  };
  for (const void* p :
       {static_cast<const void*>(nullptr), reinterpret_cast<const void*>(1),
        reinterpret_cast<const void*>(0xdeadbeefULL), reinterpret_cast<const void*>(UINTPTR_MAX)}) {
    EXPECT_EQ(line([p](writ_line& l) { writ_line_ptr(&l, p); }), printed("%p", p));
  }
  for (long long v : {0LL, 1LL, -1LL, 42LL, LLONG_MAX, LLONG_MIN}) {
    EXPECT_EQ(line([v](writ_line& l) { writ_line_i64(&l, v); }), printed("%lld", v));
  }
  for (unsigned long long v : {0ULL, 9ULL, 10ULL, ULLONG_MAX}) {
    EXPECT_EQ(line([v](writ_line& l) { writ_line_u64(&l, v); }), printed("%llu", v));
  }
  const std::string long_line = line([](writ_line& l) {
    for (int i = 0; i < 100; ++i) writ_line_str(&l, "0123456789");
  });
  EXPECT_EQ(long_line.size(), sizeof(writ_line::text) - 1);
}

}  // namespace
}  // namespace writ::testing
