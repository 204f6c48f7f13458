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
  Pending* key = pending.get();
  {
    std::lock_guard lock(mu_);
    waiting_.emplace(key, std::move(pending));
    if (!teller_.joinable()) teller_ = std::thread([this] { Run(); });
  }
  // At once here if the delivery has already ended.
  key->handle.OnDone([this, key] { Ended(key); });
}

void Completions::Ended(Pending* pending) {
  {
    std::lock_guard lock(mu_);
    auto it = waiting_.find(pending);
    if (it == waiting_.end()) return;
    ended_.push_back(std::move(it->second));
    waiting_.erase(it);
  }
  cv_.notify_one();
}

void Completions::Close() {
  std::thread teller;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    teller.swap(teller_);
  }
  cv_.notify_all();
  if (teller.joinable()) teller.join();
}

void Completions::Run() {
  for (;;) {
    std::deque<std::unique_ptr<Pending>> ended;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !ended_.empty() || (closing_ && waiting_.empty()); });
      if (ended_.empty()) return;  // closing, and nothing left to tell
      ended.swap(ended_);
    }
    Tell(ended);
  }
}

// The outcomes are written without the GIL, then told under one taking of it.
void Completions::Tell(std::deque<std::unique_ptr<Pending>>& ended) {
  std::vector<std::string> documents;
  documents.reserve(ended.size());
  for (const auto& pending : ended)
    documents.push_back(OutcomeToCompactJson(pending->handle.Wait(), pending->options));
  if (Finalizing()) {
    for (auto& pending : ended) pending->Abandon();
    return;
  }
  py::gil_scoped_acquire gil;
  for (size_t i = 0; i < ended.size(); ++i) {
    const DeliveryOutcome& outcome = ended[i]->handle.Wait();
    try {
      ended[i]->on_done(std::string(ErrorCodeName(outcome.status.code())), outcome.status.message(),
                        documents[i]);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("writ: telling a submitted delivery's outcome");
    } catch (const std::exception&) {
      // a cast that failed: the callable was not told; nothing else to do on this thread
    }
    ended[i].reset();  // the buffers and the callable, released with the GIL
  }
}

}  // namespace writ::python
