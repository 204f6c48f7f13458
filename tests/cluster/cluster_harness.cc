#include "cluster_harness.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "cluster/etcd_client.h"
#include "cluster/member.h"

namespace writ::testing {

using namespace std::chrono_literals;

int FreePort() {
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

std::unique_ptr<EtcdProcess> EtcdProcess::Start(const std::string& dir) {
  const int client = FreePort(), peer = FreePort();
  auto etcd = std::unique_ptr<EtcdProcess>(new EtcdProcess());
  // Every loopback address: members on 127.0.0.N reach it too.
  etcd->url_ = "http://127.0.0.1:" + std::to_string(client);
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
  auto proc = ChildProcess::Start(
      {"/usr/bin/etcd", "--name", "writ-test", "--data-dir", dir + "/etcd", "--listen-client-urls",
       "http://0.0.0.0:" + std::to_string(client), "--advertise-client-urls", etcd->url_,
       "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
       "--initial-cluster", "writ-test=" + peer_url},
      false, dir + "/etcd.stderr");
  if (!proc.ok()) {
    ADD_FAILURE() << "cannot start etcd: " << proc.status().ToString();
    return nullptr;
  }
  etcd->proc_ = std::make_unique<ChildProcess>(std::move(proc).value());
  auto client_api = cluster::EtcdClient::Open(etcd->url_);
  for (int i = 0; i < 100; ++i) {
    if (client_api->Prefix("/").ok()) return etcd;
    std::this_thread::sleep_for(200ms);
  }
  ADD_FAILURE() << "etcd never answered at " << etcd->url_;
  return nullptr;
}

void EtcdProcess::Stop() {
  if (!proc_) return;
  proc_->Kill(SIGKILL);
  (void)proc_->Wait(10s);
  proc_.reset();
}

EtcdProcess::~EtcdProcess() { Stop(); }

std::unique_ptr<ClusterMember> ClusterMember::Start(const std::string& host, const std::string& url,
                                                    const std::string& domain,
                                                    const std::string& data, int ttl_seconds) {
  auto proc = ChildProcess::Start({WritBinary(),      "serve",
                                   "--listen",        host + ":0",
                                   "--provider",      "tcp",
                                   "--data",          data,
                                   "--cluster",       url,
                                   "--domain",        domain,
                                   "--cluster-ttl",   std::to_string(ttl_seconds),
                                   "--window-pool",   "32MiB",
                                   "--window-size",   "8MiB",
                                   "--drain-timeout", "2s"});
  if (!proc.ok()) {
    ADD_FAILURE() << proc.status().ToString();
    return nullptr;
  }
  auto m = std::unique_ptr<ClusterMember>(new ClusterMember());
  m->proc_ = std::make_unique<ChildProcess>(std::move(proc).value());
  auto line = m->proc_->ReadLineStartingWith("writ: listening on ", 60s);
  if (!line.ok()) {
    ADD_FAILURE() << "writ serve on " << host << " never said it was listening";
    return nullptr;
  }
  std::istringstream in(line->substr(std::string("writ: listening on ").size()));
  in >> m->address_;
  return m;
}

int ClusterMember::Stop() {
  if (stopped_) return -1;
  stopped_ = true;
  proc_->Kill(SIGTERM);
  auto code = proc_->Wait(30s);
  if (!code.ok()) {
    proc_->Kill(SIGKILL);
    (void)proc_->Wait(10s);
    return -1;
  }
  return *code;
}

ClusterMember::~ClusterMember() {
  if (stopped_) return;
  proc_->Kill(SIGKILL);
  (void)proc_->Wait(10s);
}

bool WaitForMembers(const std::string& url, size_t n, std::chrono::seconds timeout) {
  auto etcd = cluster::EtcdClient::Open(url);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto members = cluster::ListMembers(*etcd);
    if (members.ok() && members->size() == n) return true;
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

}  // namespace writ::testing
