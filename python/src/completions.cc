#include "completions.h"

#include <utility>

namespace writ::python {
namespace {

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

}  // namespace

void Pending::Abandon() {
  for (auto& buffer : buffers) buffer->Abandon();
  (void)on_done.release();
}

Pending::~Pending() = default;

void Completions::Add(std::unique_ptr<Pending> pending) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(pending));
  if (idle_ == 0 && threads_.size() < max_waiters_) {
    threads_.emplace_back([this] { Run(); });
  } else {
    cv_.notify_one();
  }
}

void Completions::Close() {
  // A submit racing the close may add a waiter meanwhile: join until none is left.
  for (;;) {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      closing_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    if (threads.empty()) return;
    for (std::thread& t : threads) t.join();
  }
}

void Completions::Run() {
  for (;;) {
    std::unique_ptr<Pending> next;
    {
      std::unique_lock lock(mu_);
      ++idle_;
      cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // closing, and nothing left to tell
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    Tell(std::move(next));
  }
}

void Completions::Tell(std::unique_ptr<Pending> pending) {
  const DeliveryOutcome& outcome = pending->handle.Wait();
  const std::string code(ErrorCodeName(outcome.status.code()));
  const std::string document = OutcomeToJson(outcome, pending->options);
  if (Finalizing()) {
    pending->Abandon();
    return;
  }
  py::gil_scoped_acquire gil;
  try {
    pending->on_done(code, outcome.status.message(), document);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("writ: telling a submitted delivery's outcome");
  } catch (const std::exception&) {
    // a cast that failed: the callable was not told; nothing else to do on this thread
  }
  pending.reset();  // the buffers and the callable, released with the GIL
}

}  // namespace writ::python
