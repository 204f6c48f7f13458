// A receiver's membership: its Member record under a lease that a thread keeps alive;
// removed (key deleted, lease revoked) when the Registration is destroyed. A receiver
// that crashes stops keeping the lease alive and drops out when it expires.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <thread>

#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "common/mutex.h"

namespace writ::cluster {

class Registration {
 public:
  using Log = std::function<void(const std::string&)>;
  // Puts `member` under kMembersPrefix with a lease of `ttl_seconds`; fails (Transport)
  // when etcd cannot be reached, so `writ serve --cluster` does not run unregistered.
  static Result<std::unique_ptr<Registration>> Start(EtcdClient etcd, Member member,
                                                     int64_t ttl_seconds, Log log);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  const std::string& key() const { return key_; }

 private:
  Registration(EtcdClient etcd, Member member, int64_t ttl, Log log);
  Status Register();  // a new lease, and the member under it
  void KeepAliveLoop();

  EtcdClient etcd_;
  Member member_;
  std::string key_;
  int64_t ttl_;
  Log log_;
  int64_t lease_ = 0;  // touched by the keep-alive thread only, after Start
  Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace writ::cluster
