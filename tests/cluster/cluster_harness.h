// A real etcd on free ports in a temporary directory and `writ serve --cluster` members,
// each on its own loopback address (127.0.0.N): tests of issue 27 with real processes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "temp_dir.h"
#include "writ_harness.h"

namespace writ::testing {

// A free TCP port on 127.0.0.1 (bound once and released).
int FreePort();

class EtcdProcess {
 public:
  // Starts etcd with its data in `dir` and waits until it answers; nullptr (with a test
  // failure) when it does not.
  static std::unique_ptr<EtcdProcess> Start(const std::string& dir);
  ~EtcdProcess();
  const std::string& url() const { return url_; }
  void Stop();

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string url_;
};

class ClusterMember {
 public:
  // `writ serve --listen HOST:0 --provider tcp --data DIR --cluster URL --domain D
  //  --cluster-ttl TTL`, waiting for "listening on".
  static std::unique_ptr<ClusterMember> Start(const std::string& host, const std::string& url,
                                              const std::string& domain, const std::string& data,
                                              int ttl_seconds = 10);
  ~ClusterMember();
  const std::string& address() const { return address_; }
  ChildProcess& process() { return *proc_; }
  void Kill(int signal) { proc_->Kill(signal); }
  int Stop();  // SIGTERM, then its exit code

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string address_;
  bool stopped_ = false;
};

// Waits until etcd lists exactly `n` members (polling `writ cluster ls --json`).
bool WaitForMembers(const std::string& url, size_t n, std::chrono::seconds timeout);

}  // namespace writ::testing
