// Deliveries submitted from Python (Sender.submit), from submission until Python is told
// the outcome. A Pending holds what must outlive the send: the exported buffers (their
// objects cannot be freed or resized meanwhile, even if the caller drops them) and the
// callable told (code, message, outcome JSON). The session tells Completions as each
// delivery ends (DeliveryHandle::OnDone, on its own thread, without the GIL); one thread
// of Completions' own then writes the outcome and takes the GIL to tell Python and release
// the buffers, for as many deliveries as have ended meanwhile.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
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
  Completions() = default;
  ~Completions() { Close(); }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  // With the GIL held, after `pending->handle` was submitted; returns at once.
  void Add(std::unique_ptr<Pending> pending);
  // Waits until every delivery added was told and joins the thread: call with the GIL
  // released, after the session was closed (so every handle becomes ready).
  void Close();

 private:
  void Ended(Pending* pending);  // from the session's thread
  void Run();
  static void Tell(std::deque<std::unique_ptr<Pending>>& ended);

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<Pending*, std::unique_ptr<Pending>> waiting_;  // not ended yet
  std::deque<std::unique_ptr<Pending>> ended_;                      // to be told
  std::thread teller_;
  bool closing_ = false;
};

}  // namespace writ::python
