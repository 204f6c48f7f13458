#include "sender/mapping_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <mutex>

namespace writ::sender {
namespace {

struct Guard {
  sigjmp_buf resume;
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
};

// Set only around a guarded read, on the reading thread.
thread_local Guard* active_guard = nullptr;
// Threads inside a guarded read: while none is, the handler leaves the TLS alone (in a
// dlopen'd module a thread's first TLS access may allocate, which a handler must not).
std::atomic<int> guarded_reads{0};
struct sigaction previous_action {};
std::once_flag install_once;

void OnSigbus(int signal, siginfo_t* info, void* context) {
  const bool fault = info->si_code > 0;  // raised by the kernel, not sent: si_addr is set
  const Guard* guard = fault && guarded_reads.load() > 0 ? active_guard : nullptr;
  if (guard != nullptr) {
    const auto* at = static_cast<const uint8_t*>(info->si_addr);
    if (at >= guard->begin && at < guard->end) siglongjmp(const_cast<Guard*>(guard)->resume, 1);
  }
  // Not a guarded read: what would have happened without this handler.
  if ((previous_action.sa_flags & SA_SIGINFO) != 0) {
    previous_action.sa_sigaction(signal, info, context);
    return;
  }
  if (previous_action.sa_handler == SIG_IGN && !fault) return;  // a sent SIGBUS, ignored
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  (void)sigaction(SIGBUS, &fallback, nullptr);
  (void)raise(SIGBUS);  // delivered on return (re-run fault or not): the default action
}

}  // namespace

bool MappingGuardReady() {
  std::call_once(install_once, [] {
    struct sigaction ours {};
    ours.sa_sigaction = OnSigbus;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    // The previous action is read before ours can run.
    if (sigaction(SIGBUS, nullptr, &previous_action) != 0) return;
    (void)sigaction(SIGBUS, &ours, nullptr);
  });
  struct sigaction now {};
  if (sigaction(SIGBUS, nullptr, &now) != 0) return false;
  return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == OnSigbus;
}

bool GuardedUpdate(vocabulary::Digester& digester, std::span<const uint8_t> bytes) {
  Guard guard;
  guard.begin = bytes.data();
  guard.end = bytes.data() + bytes.size();
  if (sigsetjmp(guard.resume, 1) != 0) {  // a page past the file's end
    active_guard = nullptr;
    guarded_reads.fetch_sub(1);
    return false;
  }
  active_guard = &guard;
  guarded_reads.fetch_add(1);
  digester.Update(bytes);
  guarded_reads.fetch_sub(1);
  active_guard = nullptr;
  return true;
}

}  // namespace writ::sender
