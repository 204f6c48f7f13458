// The sender session's event loop: one thread multiplexing every delivery in flight over
// one Link. Control messages go to the delivery they name; completions to the delivery
// whose write slot holds their request id. A delivery's own failure ends it alone; a
// failure of the session (control connection lost, an error completion, a stall, a
// protocol violation) fails every delivery in flight or waiting, each with its status.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/turn_watch.h"
#include "fabric/event_fd.h"
#include "receipt/identity.h"
#include "sender/delivery_run.h"
#include "sender/digest_cache.h"
#include "sender/link.h"
#include "writ/sender.h"

namespace writ {

class DeliveryHandle::State {
 public:
  void Set(DeliveryOutcome out);
  bool Ready() const;
  const DeliveryOutcome& Wait() const;
  void OnDone(std::function<void()> fn);

 private:
  // The outcome is written once, under the lock, before `done_` is released; a waiter that
  // acquires `done_` reads it without the lock. Waiting on the flag itself (a futex only
  // when the waiter must sleep, none when nobody waits) replaces a condition variable, whose
  // waiter left the mutex marked contended so that every wake-up cost one more futex call.
  mutable Mutex mu_;
  std::atomic<bool> done_{false};
  std::function<void()> on_done_ GUARDED_BY(mu_);
  DeliveryOutcome out_;
};

}  // namespace writ

namespace writ::sender {

// One submitted delivery, from Submit until its handle is ready.
struct Submission {
  DeliveryOptions options;
  PreparedDelivery prepared;
  DeliveryOutcome out;
  std::shared_ptr<DeliveryHandle::State> state = std::make_shared<DeliveryHandle::State>();
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  // `identity` and `cache` (either may be null) outlive the session.
  Session(std::unique_ptr<Link> link, const receipt::Identity* identity, const DigestCache* cache,
          uint32_t max_in_flight);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts the session's thread.
  Status Start();
  // Queues a prepared delivery (any thread); on a broken session it fails at once.
  void Submit(std::unique_ptr<Submission> submission);
  Status health() const;
  uint32_t max_in_flight() const;
  const Link& link() const { return *link_; }
  // Fails what is in flight or waiting, stops the thread, closes the link. When the session
  // was abandoned (below) and its thread is still inside that turn, it returns the
  // abandonment's status at once and leaves the thread and the link as they are: a later
  // Close finishes the job if the thread has come back by then.
  Status Close();
  // Abandoned by its watch (TurnWatch) while its thread is still inside the turn that did
  // not end: the session, and what its thread uses (the link, the identity, the digest
  // cache), must not be freed, for that thread may still come back to them.
  bool stuck() const;

 private:
  struct Active {
    std::unique_ptr<Submission> sub;
    std::unique_ptr<DeliveryRun> run;
    std::optional<Clock::time_point> ending_by;  // failed on its own: its writes drain first
    Status failure;
    bool done = false;
  };
  // A failure of the session, noted while deliveries are being walked, acted on after.
  struct PendingBreak {
    Status session;
    Active* culprit = nullptr;
    Status culprit_status;
  };

  void Loop();
  void Turns();
  // The watch's verdict: one turn lasted longer than the longest stall timeout. Fails every
  // delivery in flight or waiting (their handles; the session's thread is not touched).
  void Abandon(std::chrono::milliseconds stuck);
  void Admit();
  void AdmitCorked();
  // The announces of the deliveries a signed sender started in this pass: one signature
  // for all of them (SignAnnounces), then each sent.
  void SignStartedAnnounces();
  // The transport receipts the deliveries made in this turn: one signature for all of them.
  void SignTransportReceipts();
  bool CanAdmit(const Submission& s) const;
  void StartRun(std::unique_ptr<Submission> sub);
  Status Turn();
  std::chrono::microseconds NextWait();
  Status ReadControl(std::chrono::microseconds wait);
  Status Dispatch(protocol::Message& message);  // a receipt's text may be moved out
  Status PollCompletions();
  // Acts on a delivery's status: its own failure ends it, a broken one the session.
  void Judge(Active& a, const Status& status);
  void Reap();
  void Complete(Active& a, const Status& status);
  // Fails every delivery with the pending break's status and closes the link.
  void BreakNow();
  // A write that finally failed usually has the receiver's reason on its way: read it.
  Status RefusalWithin(Active& a, std::chrono::milliseconds grace);
  Active* Find(const std::string& id);
  bool InFlight(const std::string& id) const;
  void NoteEnded(const std::string& id);

  std::unique_ptr<Link> link_;
  const receipt::Identity* identity_;
  const DigestCache* cache_;
  const uint32_t max_in_flight_;
  fabric::EventFd wake_;
  std::atomic<bool> wake_pending_{false};  // wake_ signalled, the loop has not looked yet
  std::thread thread_;
  TurnWatch watch_;

  mutable Mutex mu_;
  std::condition_variable loop_or_abandon_;  // the loop ended, or the session was abandoned
  std::deque<std::unique_ptr<Submission>> queue_ GUARDED_BY(mu_);
  // The submissions the session's thread has started and not completed: what an abandonment
  // fails. Their `state` and their delivery's id and size are not written once submitted.
  std::vector<Submission*> running_ GUARDED_BY(mu_);
  Status health_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  bool loop_ended_ GUARDED_BY(mu_) = false;
  bool abandoned_ GUARDED_BY(mu_) = false;

  // The session's thread only.
  std::vector<std::unique_ptr<Active>> active_;
  std::set<std::string> lingering_;  // returned to their callers, not yet ended by the receiver
  std::deque<std::string> ended_;    // recently ended here: their late messages are dropped
  std::optional<PendingBreak> break_;
  std::vector<Active*> to_sign_;  // started in this pass, their announces not signed yet
  std::vector<protocol::Announce*> announces_to_sign_;
  std::vector<receipt::UnsignedReceipt> receipts_to_sign_;
  std::vector<Active*> receipt_signers_;  // whose receipts_to_sign_ are, in order
  uint32_t idle_spins_ = 0;
  std::vector<fabric::WorkCompletion> records_;
  std::vector<pollfd> wait_fds_;
  std::vector<pollfd> poll_set_;
};

}  // namespace writ::sender
