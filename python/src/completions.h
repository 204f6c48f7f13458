// Deliveries submitted from Python (Sender.submit), from submission until Python is told
// the outcome. A Pending holds what must outlive the send: the exported buffers (their
// objects cannot be freed or resized meanwhile, even if the caller drops them) and the
// callable told (code, message, outcome JSON). Completions waits on each with the GIL
// released, on a few threads of its own (at most one per delivery the session keeps in
// flight), then takes the GIL once to tell Python and release the buffers.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bindings.h"
#include "exported_buffer.h"
#include "writ/sender.h"

namespace writ::python {

struct Pending {
  std::vector<std::unique_ptr<ExportedBuffer>> buffers;
  std::vector<Region> regions;
  DeliveryOptions options;
  DeliveryHandle handle;
  py::object on_done;  // on_done(code, message, outcome_json), once, with the GIL

  // The interpreter is finalizing: its objects can no longer be released; let them go.
  void Abandon();
  ~Pending();  // with the GIL held (or after Abandon)
};

class Completions {
 public:
  explicit Completions(size_t max_waiters) : max_waiters_(max_waiters == 0 ? 1 : max_waiters) {}
  ~Completions() { Close(); }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  // With the GIL held; returns at once.
  void Add(std::unique_ptr<Pending> pending);
  // Waits until every delivery added was told and joins the threads: call with the GIL
  // released, after the session was closed (so every handle becomes ready).
  void Close();

 private:
  void Run();
  static void Tell(std::unique_ptr<Pending> pending);

  const size_t max_waiters_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Pending>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool closing_ = false;
};

}  // namespace writ::python
