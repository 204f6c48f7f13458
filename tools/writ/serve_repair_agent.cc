#include "serve_repair_agent.h"

#include <sstream>

#include "cluster/repair_task.h"
#include "common/thread.h"
#include "repair_plan.h"
#include "writ/vocabulary.h"

namespace writ::cli {

// The result stays this long for a requester that is slow to read it.
constexpr int64_t kRepairResultTtlSeconds = 600;

Result<std::unique_ptr<RepairAgent>> RepairAgent::Start(cluster::EtcdClient etcd, Options options,
                                                        std::shared_ptr<ServeLog> log) {
  std::unique_ptr<RepairAgent> agent(
      new RepairAgent(std::move(etcd), std::move(options), std::move(log)));
  RepairAgent* self = agent.get();
  WRIT_RETURN_IF_ERROR(StartThread(agent->thread_, "the repair agent", [self] { self->Loop(); }));
  return agent;
}

RepairAgent::~RepairAgent() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RepairAgent::Loop() {
  for (;;) {
    {
      MutexLock lock(mu_);
      if (lock.WaitFor(wake_, options_.poll, [this]() REQUIRES(mu_) { return stopping_; })) return;
    }
    TakeTasks();
  }
}

void RepairAgent::TakeTasks() {
  auto tasks = etcd_.Prefix(cluster::RepairTasksFor(options_.key_id));
  if (!tasks.ok()) return;  // etcd unreachable: the keep-alive thread says so
  for (const cluster::KeyValue& kv : *tasks) {
    auto taken = etcd_.Take(kv.key);
    if (!taken.ok() || !*taken) continue;  // withdrawn by its requester
    Carry(kv.value);
  }
}

void RepairAgent::Carry(const std::string& task_json) {
  auto task = cluster::RepairTaskFromJson(task_json);
  if (!task.ok()) {
    log_->Info("repair", "ignored a repair task: " + task.status().message());
    return;
  }
  cluster::RepairResult result;
  auto replica = ParseRetention(task->replica_retention);
  std::stringstream lines;
  if (!replica.ok()) {
    result.error = replica.status().message();
  } else {
    log_->Info("repair", task->id + ": asked to restore " + std::to_string(task->k) + " " +
                             task->replica_retention + " copies from this receiver's copy");
    const RepairRequest request{task->id, task->k, *replica, options_.identity};
    auto cert = RepairFromDataDir(request, options_.data_dir, etcd_, lines);
    result.ok = cert.ok();
    if (!cert.ok()) result.error = cert.status().message();
  }
  for (std::string line; std::getline(lines, line);) {
    log_->Info("repair", line);
    result.lines.push_back(line);
  }
  auto lease = etcd_.GrantLease(kRepairResultTtlSeconds);
  Status put = lease.ok() ? etcd_.Put(cluster::RepairResultKey(options_.key_id, task->id),
                                      cluster::RepairResultToJson(result), *lease)
                          : lease.status();
  log_->Info("repair",
             task->id + ": " + (result.ok ? "done" : "not done: " + result.error) +
                 (put.ok() ? "" : "; the result could not be put in etcd: " + put.message()));
}

}  // namespace writ::cli
