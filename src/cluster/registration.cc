#include "cluster/registration.h"

#include "common/thread.h"

namespace writ::cluster {

Registration::Registration(EtcdClient etcd, Member member, int64_t ttl, Log log)
    : etcd_(std::move(etcd)),
      member_(std::move(member)),
      key_(std::string(kMembersPrefix) + member_.key_id),
      ttl_(ttl),
      log_(std::move(log)) {}

Status Registration::Register() {
  WRIT_ASSIGN_OR_RETURN(lease_, etcd_.GrantLease(ttl_));
  return etcd_.Put(key_, MemberToJson(member_), lease_);
}

Result<std::unique_ptr<Registration>> Registration::Start(EtcdClient etcd, Member member,
                                                          int64_t ttl_seconds, Log log) {
  if (ttl_seconds < 2) return Status::InvalidArgument("--cluster-ttl: at least 2 seconds");
  std::unique_ptr<Registration> r(
      new Registration(std::move(etcd), std::move(member), ttl_seconds, std::move(log)));
  WRIT_RETURN_IF_ERROR(r->Register());
  Registration* self = r.get();
  WRIT_RETURN_IF_ERROR(
      StartThread(r->thread_, "the etcd lease keep-alive", [self] { self->KeepAliveLoop(); }));
  return r;
}

void Registration::KeepAliveLoop() {
  // A third of the TTL: two keep-alives may be lost before the lease expires.
  const auto period = std::chrono::milliseconds(ttl_ * 1000 / 3);
  bool registered = true;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (lock.WaitFor(wake_, period, [this]() REQUIRES(mu_) { return stopping_; })) return;
    }
    Status s = registered ? etcd_.KeepAlive(lease_) : Register();
    if (s.ok()) {
      if (!registered) log_("registered again in etcd as " + key_ + " (the lease had lapsed)");
      registered = true;
      continue;
    }
    if (registered) log_("etcd keep-alive failed: " + s.message() + "; registering again");
    registered = false;
    if (s.code() == ErrorCode::kNotFound && Register().ok()) {
      log_("registered again in etcd as " + key_ + " (the lease had expired)");
      registered = true;
    }
  }
}

Registration::~Registration() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  Status deleted = etcd_.Delete(key_);
  if (lease_ != 0) (void)etcd_.RevokeLease(lease_);
  if (!deleted.ok()) {
    log_("could not remove " + key_ + " from etcd (" + deleted.message() +
         "); it drops out when its lease expires");
  } else {
    log_("removed " + key_ + " from etcd");
  }
}

}  // namespace writ::cluster
