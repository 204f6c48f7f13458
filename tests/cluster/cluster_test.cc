// Issue 27 with real processes: etcd on free ports in a temporary directory and three
// `writ serve --cluster` receivers, each on its own loopback address (127.0.0.2-4; not
// network namespaces), sending replicated:K and checking the certificate with writ verify.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "cluster/member.h"
#include "cluster/placement.h"
#include "cluster_harness.h"
#include "writ/replicated.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/etcd", X_OK) != 0)
      GTEST_SKIP() << "etcd is not installed (scripts/install-deps.sh installs etcd-server)";
    etcd_ = EtcdProcess::Start(dir_.path());
    ASSERT_NE(etcd_, nullptr);
    WritePatternFile(dir_.File("payload"), 27, 6 << 20);
  }

  // Members on 127.0.0.2, .3, ... in `domains`, in order; waits until etcd lists them.
  void StartMembers(const std::vector<std::string>& domains, int ttl_seconds = 30) {
    for (size_t i = 0; i < domains.size(); ++i) {
      const std::string host = "127.0.0." + std::to_string(members_.size() + 2);
      const std::string data = dir_.File("data-" + std::to_string(members_.size()));
      auto m = ClusterMember::Start(host, etcd_->url(), domains[i], data, ttl_seconds);
      ASSERT_NE(m, nullptr);
      data_dirs_.push_back(data);
      members_.push_back(std::move(m));
    }
    ASSERT_TRUE(WaitForMembers(etcd_->url(), members_.size(), 60s));
  }

  // The live members, in the placement order of delivery `id`.
  std::vector<cluster::Member> Placed(const std::string& id) {
    auto etcd = cluster::EtcdClient::Open(etcd_->url());
    auto listed = cluster::ListMembers(*etcd);
    EXPECT_TRUE(listed.ok());
    return cluster::PlacementOrder(id, listed.ok() ? *listed : std::vector<cluster::Member>{});
  }

  ClusterMember* MemberAt(const std::string& address) {
    for (auto& m : members_)
      if (m->address() == address) return m.get();
    return nullptr;
  }
  std::string DataDirOf(const std::string& address) {
    for (size_t i = 0; i < members_.size(); ++i)
      if (members_[i]->address() == address) return data_dirs_[i];
    return "";
  }

  CommandRun SendReplicated(const std::string& id, int k, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"send",
                                  dir_.File("payload"),
                                  "--id",
                                  id,
                                  "--retention",
                                  "replicated:" + std::to_string(k),
                                  "--json",
                                  "--certificate",
                                  dir_.File(id + ".cert"),
                                  "--replica-stall-timeout",
                                  "20"};
    if (std::find(extra.begin(), extra.end(), "--to") == extra.end()) {
      args.push_back("--cluster");
      args.push_back(etcd_->url());
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return RunWrit(args);
  }

  static std::set<std::string> CountedAddresses(const CommandRun& run) {
    std::set<std::string> out;
    for (const auto& r : run.json["replicas"])
      if (r["counted"].get<bool>()) out.insert(r["address"].get<std::string>());
    return out;
  }

  TempDir dir_{"writ-cluster"};
  std::unique_ptr<EtcdProcess> etcd_;
  std::vector<std::unique_ptr<ClusterMember>> members_;
  std::vector<std::string> data_dirs_;
};

TEST_F(ClusterTest, MembersRegisterAndLeaveOnShutdown) {
  StartMembers({"rack-a", "rack-b", "rack-c"});
  CommandRun ls = RunWrit({"cluster", "ls", "--cluster", etcd_->url(), "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  ASSERT_EQ(ls.json.size(), 3u);
  std::set<std::string> domains;
  for (const auto& m : ls.json) {
    domains.insert(m["domain"].get<std::string>());
    EXPECT_EQ(m["public_key"].get<std::string>().size(), 64u);
    EXPECT_NE(m["lease"].get<int64_t>(), 0);
    EXPECT_EQ(m["retention"].back(), "power-loss");
  }
  EXPECT_EQ(domains, (std::set<std::string>{"rack-a", "rack-b", "rack-c"}));
  // A 30 s lease: the key is gone when the process has exited because it removed it.
  ASSERT_EQ(members_[0]->Stop(), 0);
  auto etcd = cluster::EtcdClient::Open(etcd_->url());
  auto left = cluster::ListMembers(*etcd);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 2u);
  for (const auto& m : *left) EXPECT_NE(m.address, members_[0]->address());
}

TEST_F(ClusterTest, TwoOfThreeWithThePlacedReceiverKilledMidSend) {
  StartMembers({"rack-a", "rack-b", "rack-c"});
  const std::string victim = Placed("kill-me").front().address;
  // Stopped first so that the send is connected to it and waiting when it is killed.
  MemberAt(victim)->Kill(SIGSTOP);
  auto send =
      StartWrit({"send", dir_.File("payload"), "--id", "kill-me", "--retention", "replicated:2",
                 "--cluster", etcd_->url(), "--json", "--certificate", dir_.File("kill.cert")},
                dir_.File("send.err"));
  ASSERT_NE(send, nullptr);
  std::this_thread::sleep_for(1500ms);
  MemberAt(victim)->Kill(SIGKILL);
  CommandRun run = FinishWrit(*send, dir_.File("send.err"));
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const auto counted = CountedAddresses(run);
  EXPECT_EQ(counted.size(), 2u);
  EXPECT_EQ(counted.count(victim), 0u);
  bool victim_tried = false;
  for (const auto& r : run.json["replicas"]) victim_tried |= r["address"] == victim;
  EXPECT_TRUE(victim_tried) << "the placed receiver was never tried";
  CommandRun verify = RunWrit({"verify", dir_.File("kill.cert"), "--json"});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_EQ(verify.json["reached"]["retention"], "replicated:2");
  EXPECT_EQ(verify.json["members"].size(), 2u);
}

// writ::SendReplicated, the library's replicated:K: placed from etcd like `writ send`,
// K counted from distinct domains, and a certificate `writ verify` accepts.
TEST_F(ClusterTest, TheLibrarySendsReplicatedAndReturnsTheCertificate) {
  StartMembers({"rack-a", "rack-b", "rack-c"});
  ReplicatedSendOptions options;
  options.base.id = "from-library";
  options.base.stall_timeout = 20s;
  options.k = 2;
  options.cluster = etcd_->url();
  const ReplicatedDelivery sent = writ::SendReplicated(dir_.File("payload"), options);
  ASSERT_TRUE(sent.status.ok()) << sent.status.message();
  std::set<std::string> counted;
  for (const ReplicaReport& r : sent.replicas)
    if (r.counted) counted.insert(r.address);
  EXPECT_EQ(counted.size(), 2u);
  const auto placed = Placed("from-library");
  ASSERT_GE(placed.size(), 2u);
  EXPECT_EQ(counted.count(placed[0].address), 1u) << "the first placed receiver holds a copy";
  ASSERT_FALSE(sent.certificate_json.empty());
  std::ofstream(dir_.File("library.cert")) << sent.certificate_json << '\n';
  CommandRun verify = RunWrit({"verify", dir_.File("library.cert"), "--json"});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_EQ(verify.json["reached"]["retention"], "replicated:2");

  // Options that cannot be right are refused before anything is sent.
  options.receivers = {members_[0]->address()};
  const ReplicatedDelivery both = writ::SendReplicated(dir_.File("payload"), options);
  EXPECT_EQ(both.status.code(), ErrorCode::kInvalidArgument) << both.status.message();
  EXPECT_TRUE(both.replicas.empty());
  options.receivers.clear();
  options.replica_retention = RetentionClass::kVolatile;
  const ReplicatedDelivery volatile_copies = writ::SendReplicated(dir_.File("payload"), options);
  EXPECT_EQ(volatile_copies.status.code(), ErrorCode::kInvalidArgument);
}

TEST_F(ClusterTest, ExpiredLeaseIsNotChosen) {
  StartMembers({"rack-a", "rack-b"});
  StartMembers({"rack-c"}, /*ttl_seconds=*/2);
  const std::string crashed = members_.back()->address();
  members_.back()->Kill(SIGKILL);
  ASSERT_TRUE(WaitForMembers(etcd_->url(), 2, 60s)) << "the crashed receiver never dropped out";
  CommandRun run = SendReplicated("after-crash", 2);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const auto& r : run.json["replicas"]) EXPECT_NE(r["address"], crashed);
  // Three copies are not to be had from two live receivers: exit 6, naming what was reached.
  CommandRun three = SendReplicated("after-crash-3", 3);
  EXPECT_EQ(three.exit_code, 6) << three.err;
  EXPECT_NE(three.err.find("replicated:3 not reached: 2 retained copies"), std::string::npos)
      << three.err;
  EXPECT_FALSE(std::ifstream(dir_.File("after-crash-3.cert")).good())
      << "a replicated:3 certificate was written with fewer copies";
}

TEST_F(ClusterTest, SameDomainReceiversAreNeverBothCounted) {
  StartMembers({"rack-a", "rack-a", "rack-b"});
  CommandRun two = SendReplicated("same-domain", 2);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  std::set<std::string> domains;
  for (const auto& m : two.json["certificate"]["members"])
    domains.insert(m["failure_domain"].get<std::string>());
  EXPECT_EQ(domains, (std::set<std::string>{"rack-a", "rack-b"}));
  CommandRun three = SendReplicated("same-domain-3", 3);
  EXPECT_EQ(three.exit_code, 6) << three.err;
  // Static --to of the two rack-a receivers: the second copy is refused as a second domain.
  CommandRun to = SendReplicated("static-same", 2,
                                 {"--to", members_[0]->address() + "," + members_[1]->address()});
  EXPECT_EQ(to.exit_code, 6) << to.err;
  EXPECT_NE(to.err.find("domain 'rack-a' already holds a copy"), std::string::npos) << to.err;
}

TEST_F(ClusterTest, EtcdStoppedStaticListWorksClusterFailsWithExit4) {
  StartMembers({"rack-a", "rack-b"});
  etcd_->Stop();
  CommandRun to =
      SendReplicated("static", 2, {"--to", members_[0]->address() + "," + members_[1]->address()});
  ASSERT_EQ(to.exit_code, 0) << to.err;
  EXPECT_EQ(RunWrit({"verify", dir_.File("static.cert")}).exit_code, 0);
  CommandRun cluster = SendReplicated("via-etcd", 2);
  EXPECT_EQ(cluster.exit_code, 4) << cluster.err;
  EXPECT_NE(cluster.err.find("is not reachable"), std::string::npos) << cluster.err;
  CommandRun ls = RunWrit({"cluster", "ls", "--cluster", etcd_->url()});
  EXPECT_EQ(ls.exit_code, 4) << ls.err;
}

// A receiver told to join a cluster whose etcd is down does not serve outside it: it
// exits 4 (the coordination service failed) naming etcd, before it listens.
TEST_F(ClusterTest, ServeWithEtcdDownExitsFourNamingEtcd) {
  etcd_->Stop();
  const std::string err = dir_.File("serve-down.err");
  auto serve = StartWrit({"serve", "--listen", "127.0.0.2:0", "--provider", "tcp", "--data",
                          dir_.File("down-data"), "--cluster", etcd_->url(), "--domain", "a"},
                         err);
  ASSERT_NE(serve, nullptr);
  auto code = serve->Wait(30s);
  ASSERT_TRUE(code.ok()) << "serve kept running with etcd down";
  EXPECT_EQ(*code, 4);
  std::ifstream in(err);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("etcd"), std::string::npos) << said;
}

TEST_F(ClusterTest, VerifyRefusesAForgedCertificateAndPinsKeys) {
  StartMembers({"rack-a", "rack-b"});
  CommandRun run = SendReplicated("forge", 2);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json cert = run.json["certificate"];
  auto write = [&](const std::string& name, const nlohmann::json& j) {
    std::ofstream(dir_.File(name)) << j.dump();
    return dir_.File(name);
  };
  // Relabelled domain: the member's signature no longer covers it.
  nlohmann::json relabelled = cert;
  relabelled["members"][1]["failure_domain"] = "rack-z";
  CommandRun r1 = RunWrit({"verify", write("relabelled", relabelled)});
  EXPECT_EQ(r1.exit_code, 5) << r1.err;
  // Duplicated member (one key and domain counted twice).
  nlohmann::json duplicated = cert;
  duplicated["members"][1] = duplicated["members"][0];
  CommandRun r2 = RunWrit({"verify", write("duplicated", duplicated)});
  EXPECT_EQ(r2.exit_code, 5) << r2.err;
  EXPECT_NE(r2.err.find("already counted"), std::string::npos) << r2.err;
  // Pinned keys: the right ones pass, one missing fails.
  std::vector<std::string> keys;
  for (const auto& m : cert["members"]) keys.push_back(m["signature"]["public_key"]);
  const std::string path = write("good", cert);
  EXPECT_EQ(RunWrit({"verify", path, "--key", keys[0], "--key", keys[1]}).exit_code, 0);
  CommandRun pinned = RunWrit({"verify", path, "--key", keys[0]});
  EXPECT_EQ(pinned.exit_code, 5) << pinned.err;
  EXPECT_NE(pinned.err.find("not one of the expected keys"), std::string::npos) << pinned.err;
}

// Two holders lost one after the other: the first repaired from this test's host, which holds
// no copy (the surviving holder's serve takes the task from etcd and sends its copy); the
// second on the host of the receiver that now holds one (--data).
TEST_F(ClusterTest, QueryFindsTheCopiesAndRepairRestoresDestroyedOnes) {
  StartMembers({"rack-a", "rack-b", "rack-c", "rack-d"}, /*ttl_seconds=*/4);
  CommandRun sent = SendReplicated("repair-me", 2);
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const auto counted = CountedAddresses(sent);
  ASSERT_EQ(counted.size(), 2u);
  CommandRun q = RunWrit({"query", "repair-me", "--cluster", etcd_->url(), "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.json["held"], 2);
  // One holder's machine is lost: process and data directory.
  const std::string lost = *counted.begin(), survivor = *counted.rbegin();
  MemberAt(lost)->Kill(SIGKILL);
  std::filesystem::remove_all(DataDirOf(lost));
  ASSERT_TRUE(WaitForMembers(etcd_->url(), 3, 60s));
  CommandRun after = RunWrit({"query", "repair-me", "--cluster", etcd_->url(), "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.json["held"], 1);
  CommandRun repair = RunWrit({"repair", "repair-me", "--cluster", etcd_->url(), "--retention",
                               "replicated:2", "--certificates", dir_.path()});
  ASSERT_EQ(repair.exit_code, 0) << repair.err << repair.out;
  EXPECT_NE(repair.out.find("asked " + survivor), std::string::npos) << repair.out;
  CommandRun verify = RunWrit({"verify", dir_.File("repair-me.cert"), "--json"});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_EQ(verify.json["reached"]["retention"], "replicated:2");
  CommandRun healed = RunWrit({"query", "repair-me", "--cluster", etcd_->url(), "--json"});
  ASSERT_EQ(healed.json["held"], 2) << healed.out;
  std::string restored;
  for (const auto& copy : healed.json["copies"]) {
    if (copy["state"] == "retained" && copy["address"] != survivor) restored = copy["address"];
  }
  ASSERT_FALSE(restored.empty()) << healed.out;

  // The first survivor is lost too (not yet dropped out: it is tried and skipped); the
  // receiver that now holds a copy repairs from its data directory.
  MemberAt(survivor)->Kill(SIGKILL);
  std::filesystem::remove_all(DataDirOf(survivor));
  CommandRun local =
      RunWrit({"repair", "repair-me", "--cluster", etcd_->url(), "--data", DataDirOf(restored),
               "--retention", "replicated:2", "--certificates", dir_.path()});
  ASSERT_EQ(local.exit_code, 0) << local.err << local.out;
  CommandRun again = RunWrit({"verify", dir_.File("repair-me.cert"), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.json["reached"]["retention"], "replicated:2");
}

}  // namespace
}  // namespace writ::testing
