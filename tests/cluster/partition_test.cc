// Issue 27: K = 2 of 3 with one receiver partitioned mid-send. That receiver runs in its own
// network namespace joined to this one by a veth pair, rate-limited (tbf) so that its copy
// is still in flight; the link is set down once the receiver has begun writing the
// delivery (inotify on its payloads/). The send must count K from the other two and name
// the partitioned one. Needs root and iproute2 (`ip`, `tc`); otherwise skipped, saying why.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <set>

#include "temp_dir.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

// The iproute2 program NAME ("ip", "tc") by its path (ChildProcess searches no PATH).
std::string Iproute2(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/"})
    if (access((dir + name).c_str(), X_OK) == 0) return dir + name;
  return "";
}

// `ip ARGS...` (or `tc`), waited for; true on exit 0.
bool RunIp(std::vector<std::string> argv) {
  argv[0] = Iproute2(argv[0]);
  if (argv[0].empty()) return false;
  auto proc = ChildProcess::Start(argv, false, "/dev/null");
  if (!proc.ok()) return false;
  auto code = proc->Wait(20s);
  return code.ok() && *code == 0;
}

// A namespace "writ-part-PID" and a veth pair wpPIDa (here, 10.231.N.1) – wpPIDb (there,
// 10.231.N.2); removed (with the pair) when destroyed.
class PartitionNamespace {
 public:
  PartitionNamespace() {
    const std::string pid = std::to_string(::getpid());
    const std::string subnet = "10.231." + std::to_string(::getpid() % 250) + ".";
    name_ = "writ-part-" + pid;
    here_ = "wp" + pid + "a";
    there_ = "wp" + pid + "b";
    address_ = subnet + "2";
    ok_ = RunIp({"ip", "netns", "add", name_}) &&
          RunIp({"ip", "link", "add", here_, "type", "veth", "peer", "name", there_}) &&
          RunIp({"ip", "link", "set", there_, "netns", name_}) &&
          RunIp({"ip", "addr", "add", subnet + "1/30", "dev", here_}) &&
          RunIp({"ip", "link", "set", here_, "up"}) &&
          RunIp({"ip", "netns", "exec", name_, "ip", "addr", "add", address_ + "/30", "dev",
                 there_}) &&
          RunIp({"ip", "netns", "exec", name_, "ip", "link", "set", there_, "up"}) &&
          RunIp({"ip", "netns", "exec", name_, "ip", "link", "set", "lo", "up"}) &&
          // About 25 MB/s toward the receiver: its copy takes a second or more.
          RunIp({"tc", "qdisc", "add", "dev", here_, "root", "tbf", "rate", "200mbit", "burst",
                 "64kb", "latency", "400ms"});
  }
  ~PartitionNamespace() {
    (void)RunIp({"ip", "link", "del", here_});
    (void)RunIp({"ip", "netns", "del", name_});
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  const std::string& address() const { return address_; }
  bool CutLink() { return RunIp({"ip", "link", "set", here_, "down"}); }

 private:
  std::string name_, here_, there_, address_;
  bool ok_ = false;
};

// Watches `dir` for a new file (the receiver began writing a payload), from construction on.
class FileCreation {
 public:
  explicit FileCreation(const std::string& dir) : fd_(inotify_init1(IN_CLOEXEC)) {
    ok_ = fd_ >= 0 && inotify_add_watch(fd_, dir.c_str(), IN_CREATE) >= 0;
  }
  ~FileCreation() {
    if (fd_ >= 0) close(fd_);
  }
  bool Wait(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    return ok_ && poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

 private:
  int fd_;
  bool ok_ = false;
};

TEST(ClusterPartition, TwoOfThreeWithOneReceiverPartitionedMidSend) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  if (Iproute2("ip").empty() || Iproute2("tc").empty())
    GTEST_SKIP() << "iproute2 (ip, tc) is not installed";
  PartitionNamespace ns;
  if (!ns.ok()) GTEST_SKIP() << "cannot make a network namespace joined by veth with tbf here";
  TempDir dir("writ-partition");
  WritePatternFile(dir.File("payload"), 27, 48 << 20);
  const std::string data = dir.File("data-partitioned");
  auto proc = ChildProcess::Start(
      {Iproute2("ip"), "netns", "exec", ns.name(), WritBinary(), "serve", "--listen",
       ns.address() + ":0", "--provider", "tcp", "--data", data, "--domain", "rack-p"},
      false, dir.File("partitioned.err"));
  ASSERT_TRUE(proc.ok()) << proc.status().ToString();
  auto listening = proc->ReadLineStartingWith("writ: listening on ", 60s);
  ASSERT_TRUE(listening.ok()) << "the partitioned receiver never listened";
  const std::string said = listening->substr(std::string("writ: listening on ").size());
  const std::string address = said.substr(0, said.find(' '));
  std::vector<std::unique_ptr<Serve>> others;
  for (const char* domain : {"rack-b", "rack-c"}) {
    others.push_back(Serve::Start(
        "tcp", {"--data", dir.File(std::string("data-") + domain), "--domain", domain}));
    ASSERT_NE(others.back(), nullptr);
  }
  FileCreation began(data + "/payloads");
  auto send =
      StartWrit({"send", dir.File("payload"), "--id", "cut-off", "--retention", "replicated:2",
                 "--to", address + "," + others[0]->address() + "," + others[1]->address(),
                 "--replica-stall-timeout", "3", "--json"},
                dir.File("send.err"));
  ASSERT_NE(send, nullptr);
  if (!began.Wait(60s)) {
    CommandRun never = FinishWrit(*send, dir.File("send.err"));
    FAIL() << "the delivery never reached the partitioned receiver: " << never.err << never.out;
  }
  ASSERT_TRUE(ns.CutLink());
  CommandRun run = FinishWrit(*send, dir.File("send.err"));
  proc->Kill(SIGKILL);
  (void)proc->Wait(10s);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  std::set<std::string> counted;
  std::string why_not;
  for (const auto& r : run.json["replicas"]) {
    if (r["counted"].get<bool>()) counted.insert(r["address"].get<std::string>());
    if (r["address"] == address && !r["counted"].get<bool>()) why_not = r["why_not"];
  }
  EXPECT_EQ(counted, (std::set<std::string>{others[0]->address(), others[1]->address()}));
  // Replaced because the cut link stalled it (--replica-stall-timeout), not for another cause.
  EXPECT_NE(why_not.find("no progress for 3000 ms"), std::string::npos)
      << "the partitioned receiver is not named as replaced by a stall: " << why_not << run.out;
  EXPECT_EQ(run.json["certificate"]["members"].size(), 2u);
}

}  // namespace
}  // namespace writ::testing
