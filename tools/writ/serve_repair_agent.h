// The serve's half of `writ repair` from another host (cluster/repair_task.h): a thread
// that looks in etcd for repair tasks addressed to this receiver, claims each by deleting
// it, sends this receiver's copy from its data directory to the next placed members
// (repair_plan.h: validated at each destination), and puts the result for the requester.
// Started with `writ serve --cluster` and `--data`; stopped before the receiver drains.
#pragma once

#include <condition_variable>
#include <memory>
#include <string>
#include <thread>

#include "cluster/etcd_client.h"
#include "common/mutex.h"
#include "serve_log.h"

namespace writ::cli {

class RepairAgent {
 public:
  struct Options {
    std::string key_id;    // this receiver's: tasks are addressed to it
    std::string data_dir;  // where its copies are
    std::string identity;  // signs its queries to the other members
    std::chrono::milliseconds poll{500};
  };
  static Result<std::unique_ptr<RepairAgent>> Start(cluster::EtcdClient etcd, Options options,
                                                    std::shared_ptr<ServeLog> log);
  // Stops looking for tasks; a repair under way is finished first (each copy it sends gives
  // up after 10 s without progress).
  ~RepairAgent();
  RepairAgent(const RepairAgent&) = delete;
  RepairAgent& operator=(const RepairAgent&) = delete;

 private:
  RepairAgent(cluster::EtcdClient etcd, Options options, std::shared_ptr<ServeLog> log)
      : etcd_(std::move(etcd)), options_(std::move(options)), log_(std::move(log)) {}
  void Loop();
  // One pass over the tasks addressed here.
  void TakeTasks();
  void Carry(const std::string& task_json);

  cluster::EtcdClient etcd_;
  Options options_;
  std::shared_ptr<ServeLog> log_;
  Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace writ::cli
