// writ::ExecStep (writ/receiver.h): a processing step that runs a command per delivery.
#include <string.h>

#include <condition_variable>
#include <memory>

#include "common/mutex.h"
#include "receiver/exec_child.h"
#include "writ/receiver.h"

namespace writ {
namespace {

using namespace std::chrono_literals;

// A counting semaphore over every connection's deliveries; a wait gives up when the
// receiver's shutdown asks the step to stop.
class Slots {
 public:
  explicit Slots(uint32_t count) : free_(count == 0 ? 1 : count) {}
  bool Acquire(const std::function<bool()>& stop_requested) {
    MutexLock lock(mu_);
    for (;;) {
      if (free_ > 0) {
        --free_;
        return true;
      }
      if (stop_requested && stop_requested()) return false;
      (void)lock.WaitFor(cv_, 100ms);
    }
  }
  void Release() {
    {
      MutexLock lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  uint32_t free_ GUARDED_BY(mu_);
};

std::string Seconds(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + "s";
  return std::to_string(t.count()) + "ms";
}

// "9 (SIGKILL)".
std::string SignalName(int signal_number) {
  const char* abbrev = sigabbrev_np(signal_number);
  const std::string number = std::to_string(signal_number);
  return abbrev == nullptr ? number : number + " (SIG" + abbrev + ")";
}

// The command's output, a line at a time, each prefixed with the delivery's id.
void LogOutput(const ExecStepOptions& options, const std::string& id,
               const receiver::ExecOutcome& outcome) {
  if (!options.on_output || outcome.output.empty()) return;
  const std::string prefix = "exec " + id + ": ";
  if (outcome.output_dropped > 0) {
    options.on_output(prefix + "(" + std::to_string(outcome.output_dropped) +
                      " earlier bytes of output not kept)");
  }
  size_t start = 0;
  while (start < outcome.output.size()) {
    size_t end = outcome.output.find('\n', start);
    if (end == std::string::npos) end = outcome.output.size();
    options.on_output(prefix + outcome.output.substr(start, end - start));
    start = end + 1;
  }
}

// Ok for exit status 0; otherwise what ended the command.
Status Verdict(const ExecStepOptions& options, const receiver::ExecOutcome& outcome) {
  using End = receiver::ExecOutcome::End;
  switch (outcome.end) {
    case End::kExited:
      if (outcome.code == 0) return Status::Ok();
      return Status::Internal("the command exited with status " + std::to_string(outcome.code));
    case End::kSignaled:
      return Status::Internal("the command was killed by signal " + SignalName(outcome.code));
    case End::kTimedOut:
      return Status::Timeout("the command timed out after " + Seconds(options.timeout) +
                             " (its process group was killed)");
    case End::kStopped:
      return Status::Cancelled("the command was stopped by the receiver's shutdown");
  }
  return Status::Internal("the command ended in an unknown way");
}

Status RunOnce(const ExecStepOptions& options, Slots& slots, const DeliveryView& view) {
  if (!slots.Acquire(view.stop_requested)) {
    return Status::Cancelled("the receiver's shutdown came before the command could start");
  }
  receiver::ExecRequest request;
  request.command = options.command;
  request.environment = {"WRIT_DELIVERY_ID=" + view.id, "WRIT_BYTES=" + std::to_string(view.bytes),
                         "WRIT_RULE=" + view.rule, "WRIT_DIGEST=" + view.digest_hex};
  request.bytes = view.bytes;
  request.read = view.read;
  request.deadline = std::chrono::steady_clock::now() + options.timeout;
  request.stop_requested = view.stop_requested;
  auto outcome = receiver::RunCommand(request);
  slots.Release();
  if (!outcome.ok()) return outcome.status();
  LogOutput(options, view.id, *outcome);
  return Verdict(options, *outcome);
}

}  // namespace

ProcessingStep ExecStep(ExecStepOptions options) {
  auto slots = std::make_shared<Slots>(options.concurrency);
  ProcessingStep step;
  step.name = options.command;
  step.success_statement = "(run by /bin/sh -c) exited with status 0";
  step.run = [options = std::move(options), slots](const DeliveryView& view) {
    return RunOnce(options, *slots, view);
  };
  return step;
}

}  // namespace writ
