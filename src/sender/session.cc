#include "sender/session.h"

#include <algorithm>
#include <thread>

#include "common/thread.h"
#include "protocol/codec.h"
#include "sender/request_signing.h"

namespace writ {

void DeliveryHandle::State::Set(DeliveryOutcome out) {
  std::function<void()> tell;
  {
    MutexLock lock(mu_);
    // The first outcome stands: an abandoned session's thread may still come back and
    // complete a delivery its watch already failed.
    if (done_.load(std::memory_order_relaxed)) return;
    out_ = std::move(out);
    done_.store(true, std::memory_order_release);
    tell = std::move(on_done_);
  }
  done_.notify_all();
  if (tell) tell();
}

void DeliveryHandle::State::OnDone(std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    if (!done_.load(std::memory_order_relaxed)) {  // Set stores it under this lock
      on_done_ = std::move(fn);
      return;
    }
  }
  fn();
}

bool DeliveryHandle::State::Ready() const { return done_.load(std::memory_order_acquire); }

const DeliveryOutcome& DeliveryHandle::State::Wait() const {
  while (!done_.load(std::memory_order_acquire)) done_.wait(false, std::memory_order_acquire);
  return out_;  // never written again once done
}

bool DeliveryHandle::Ready() const { return state_ != nullptr && state_->Ready(); }

void DeliveryHandle::OnDone(std::function<void()> fn) const {
  if (state_ == nullptr) {
    fn();
    return;
  }
  state_->OnDone(std::move(fn));
}

const DeliveryOutcome& DeliveryHandle::Wait() const {
  static const DeliveryOutcome invalid = [] {
    DeliveryOutcome out;
    out.status = Status::InvalidArgument("no delivery was submitted");
    return out;
  }();
  return state_ != nullptr ? state_->Wait() : invalid;
}

}  // namespace writ

namespace writ::sender {
namespace {

using namespace std::chrono_literals;
// As DeliveryRun's own loop: where the queues have no wait object, idle polls with writes
// in flight before each poll naps (where they have one, the loop blocks at once: NextWait).
constexpr uint32_t kSpinsBeforeNap = 2;
constexpr std::chrono::microseconds kNap{20};
constexpr std::chrono::milliseconds kRefusalGrace{200};
// How long a delivery that failed on its own may take to see its writes complete.
constexpr std::chrono::seconds kQuiesce{5};
constexpr size_t kEndedKept = 1024;
// How long Close waits for an abandoned session's thread to come back before leaving it.
constexpr std::chrono::seconds kComeBackGrace{1};

}  // namespace

Session::Session(std::unique_ptr<Link> link, const receipt::Identity* identity,
                 const DigestCache* cache, uint32_t max_in_flight)
    : link_(std::move(link)),
      identity_(identity),
      cache_(cache),
      max_in_flight_(std::max<uint32_t>(
          1, std::min(max_in_flight, std::max<uint32_t>(1, link_->hello().max_in_flight)))) {
  running_.reserve(max_in_flight_);
}

Session::~Session() {
  (void)Close();
  // Only when the owner did not heed stuck(): better a thread left running than a terminate.
  if (thread_.joinable()) thread_.detach();
}

Status Session::Start() {
  WRIT_ASSIGN_OR_RETURN(wake_, fabric::EventFd::Create());
  WRIT_RETURN_IF_ERROR(StartThread(thread_, "the sender session's thread", [this] { Loop(); }));
  return watch_.Start("the sender session's watch thread",
                      [this](std::chrono::milliseconds stuck) { Abandon(stuck); });
}

uint32_t Session::max_in_flight() const { return max_in_flight_; }

Status Session::health() const {
  MutexLock lock(mu_);
  return health_;
}

void Session::Submit(std::unique_ptr<Submission> submission) {
  watch_.AtLeast(submission->options.stall_timeout);
  {
    MutexLock lock(mu_);
    if (health_.ok()) {
      queue_.push_back(std::move(submission));
      submission.reset();
    } else {
      submission->out.status = health_;
    }
  }
  if (submission) {
    submission->state->Set(std::move(submission->out));
    return;
  }
  // One wake-up for many submissions: the loop clears the flag before it looks at the
  // queue, so a submission it may not see always signals.
  if (!wake_pending_.exchange(true, std::memory_order_acq_rel)) wake_.Signal();
}

Status Session::Close() {
  if (thread_.joinable()) {
    MutexLock lock(mu_);
    stop_ = true;
    wake_.Signal();
    lock.Wait(loop_or_abandon_, [this]() REQUIRES(mu_) { return loop_ended_ || abandoned_; });
    if (!loop_ended_) {
      lock.WaitFor(loop_or_abandon_, kComeBackGrace,
                   [this]() REQUIRES(mu_) { return loop_ended_; });
    }
    if (!loop_ended_) return health_;
  }
  watch_.Stop();
  if (thread_.joinable()) thread_.join();
  return link_->Close();
}

bool Session::stuck() const {
  MutexLock lock(mu_);
  return abandoned_ && !loop_ended_;
}

void Session::Abandon(std::chrono::milliseconds stuck) {
  const Status why = Status::Transport(
      "the session's thread has been inside one turn for " + std::to_string(stuck.count()) +
      " ms, longer than the longest stall timeout of its deliveries (" +
      std::to_string(watch_.limit().count()) +
      " ms): a call it made has not returned (libfabric 1.17's shm provider spins for ever on a "
      "lock its peer held when it was killed); the session is abandoned, its thread left "
      "there, and a source in the caller's memory may still be read by that call: keep it");
  std::deque<std::unique_ptr<Submission>> waiting;
  std::vector<std::pair<std::shared_ptr<DeliveryHandle::State>, DeliveryOutcome>> running;
  {
    MutexLock lock(mu_);
    if (health_.ok()) health_ = why;
    abandoned_ = true;
    waiting.swap(queue_);
    for (const Submission* s : running_) {
      DeliveryOutcome out;
      out.delivery.id = s->out.delivery.id;
      out.delivery.bytes = s->out.delivery.bytes;
      out.status = why;
      running.emplace_back(s->state, std::move(out));
    }
  }
  loop_or_abandon_.notify_all();
  for (auto& [state, out] : running) state->Set(std::move(out));
  for (auto& s : waiting) {
    s->out.status = why;
    s->state->Set(std::move(s->out));
  }
}

void Session::Loop() {
  Turns();
  {
    MutexLock lock(mu_);
    loop_ended_ = true;
  }
  loop_or_abandon_.notify_all();
}

void Session::Turns() {
  for (;;) {
    watch_.TurnBegins();
    bool stop = false;
    {
      MutexLock lock(mu_);
      stop = stop_ || !health_.ok();
    }
    if (stop && !break_)
      break_ =
          PendingBreak{Status::InvalidArgument("the session was closed"), nullptr, Status::Ok()};
    wake_pending_.store(false, std::memory_order_release);
    if (!break_) Admit();
    if (!break_) {
      Status turned = Turn();
      if (!turned.ok() && !break_) break_ = PendingBreak{turned, nullptr, Status::Ok()};
    }
    SignTransportReceipts();
    if (!break_) Reap();
    if (break_) {
      BreakNow();
      watch_.TurnEnds();
      return;
    }
    watch_.TurnEnds();
  }
}

bool Session::InFlight(const std::string& id) const {
  if (lingering_.count(id) > 0) return true;
  return std::any_of(active_.begin(), active_.end(),
                     [&](const auto& a) { return a->sub->out.delivery.id == id; });
}

bool Session::CanAdmit(const Submission& s) const { return !InFlight(s.out.delivery.id); }

// Starts waiting deliveries while the session has room, in submission order; one of an id
// already in flight waits for it. Staging grows only while no write is in flight, so a
// delivery that needs more waits for the writes to drain, and the ones after it too.
void Session::Admit() {
  // The announces and ring `deliver`s of every delivery started here leave in one write.
  link_->channel().Cork();
  AdmitCorked();
  SignStartedAnnounces();
  if (Status sent = link_->channel().Uncork(); !sent.ok() && !break_) {
    break_ = PendingBreak{
        Status::Transport("control connection to the receiver lost: " + sent.message()), nullptr,
        Status::Ok()};
  }
}

void Session::AdmitCorked() {
  for (;;) {
    std::unique_ptr<Submission> next;
    {
      MutexLock lock(mu_);
      if (active_.size() + lingering_.size() >= max_in_flight_) return;
      auto it = std::find_if(queue_.begin(), queue_.end(),
                             [this](const auto& s) { return CanAdmit(*s); });
      if (it == queue_.end()) return;
      const Submission& s = **it;
      const uint64_t slot = std::min(s.prepared.chunk_size, s.out.delivery.bytes);
      if (slot > 0 && !link_->StagingFits(slot) && !link_->WritesIdle()) return;
      next = std::move(*it);
      queue_.erase(it);
      running_.push_back(next.get());
    }
    StartRun(std::move(next));
    if (break_) return;
  }
}

void Session::StartRun(std::unique_ptr<Submission> sub) {
  auto a = std::make_unique<Active>();
  a->sub = std::move(sub);
  const std::string id = a->sub->out.delivery.id;
  ended_.erase(std::remove(ended_.begin(), ended_.end(), id), ended_.end());
  a->run = std::make_unique<DeliveryRun>(*link_, identity_, a->sub->options, a->sub->prepared,
                                         a->sub->out, std::string());
  if (identity_ != nullptr) {
    a->run->SignAnnounceLater();
    a->run->SignTransportReceiptLater();
    to_sign_.push_back(a.get());
  }
  Status started = a->run->Start();
  active_.push_back(std::move(a));
  Judge(*active_.back(), started);
}

void Session::SignStartedAnnounces() {
  if (to_sign_.empty()) return;
  announces_to_sign_.clear();
  for (Active* a : to_sign_) {
    if (a->ending_by || a->done) continue;
    if (protocol::Announce* announce = a->run->AnnounceToSign()) {
      announces_to_sign_.push_back(announce);
    }
  }
  const Status signed_all =
      SignAnnounces(*identity_, link_->hello().receiver_id, announces_to_sign_);
  for (Active* a : to_sign_) {
    if (break_) break;
    if (a->ending_by || a->done) continue;
    Judge(*a, signed_all.ok() ? a->run->AnnounceSigned() : signed_all);
  }
  to_sign_.clear();
}

void Session::SignTransportReceipts() {
  if (identity_ == nullptr) return;
  receipts_to_sign_.clear();
  receipt_signers_.clear();
  for (auto& a : active_) {
    if (auto made = a->run->TakeTransportReceiptToSign()) {
      receipts_to_sign_.push_back(std::move(*made));
      receipt_signers_.push_back(a.get());
    }
  }
  if (receipts_to_sign_.empty()) return;
  auto texts = receipt::SignUnsignedJsonOnly(receipts_to_sign_, *identity_);
  for (size_t i = 0; i < receipt_signers_.size(); ++i) {
    if (texts.ok()) {
      receipt_signers_[i]->run->OnTransportReceiptSigned(std::move((*texts)[i]));
    } else {
      Judge(*receipt_signers_[i], texts.status());
    }
  }
}

std::chrono::microseconds Session::NextWait() {
  const bool can_post = std::any_of(active_.begin(), active_.end(), [](const auto& a) {
    return !a->ending_by && a->run->CanPost();
  });
  if (can_post) return 0us;
  if (link_->busy_poll() && !active_.empty()) {
    std::this_thread::yield();  // --poll busy: never sleeps while deliveries are in flight
    return 0us;
  }
  if (link_->WritesIdle()) return active_.empty() ? 500ms : 20ms;  // only the receiver moves
  if (link_->node().can_wait()) {
    // Block until a completion or the receiver: on a small machine the receiver's threads
    // need the core this loop would otherwise burn. No idle polls first: PrepareWait's
    // fi_trywait finds a completion already there, and each poll would be a ppoll and a
    // provider epoll_wait for nothing.
    auto prepared = link_->node().PrepareWait(wait_fds_);
    if (!prepared.ok()) {
      break_ = PendingBreak{prepared.status(), nullptr, Status::Ok()};
      return 0us;
    }
    return *prepared ? std::chrono::microseconds(20ms) : 0us;
  }
  if (idle_spins_ < kSpinsBeforeNap) return 0us;
  return kNap;
}

// One turn: what the receiver said, what the fabric completed, then each delivery's step.
Status Session::Turn() {
  wait_fds_.clear();
  const std::chrono::microseconds wait = NextWait();
  if (break_) return Status::Ok();
  WRIT_RETURN_IF_ERROR(ReadControl(wait));
  if (break_) return Status::Ok();
  WRIT_RETURN_IF_ERROR(PollCompletions());
  // What the deliveries send in this turn (a ring delivery's `deliver`, announces, commits)
  // leaves in one write.
  link_->channel().Cork();
  for (auto& a : active_) {
    if (break_) break;
    if (!a->ending_by && !a->done) Judge(*a, a->run->Step());
  }
  if (Status sent = link_->channel().Uncork(); !sent.ok()) {
    return Status::Transport("control connection to the receiver lost: " + sent.message());
  }
  return Status::Ok();
}

Status Session::ReadControl(std::chrono::microseconds wait) {
  poll_set_.assign({pollfd{link_->channel().fd(), POLLIN, 0}, pollfd{wake_.fd(), POLLIN, 0}});
  poll_set_.insert(poll_set_.end(), wait_fds_.begin(), wait_fds_.end());
  const timespec ts{static_cast<time_t>(wait.count() / 1000000),
                    static_cast<long>(wait.count() % 1000000) * 1000};
  const int ready = ppoll(poll_set_.data(), poll_set_.size(), &ts, nullptr);
  if (ready > 0 && poll_set_[1].revents != 0) wake_.Drain();
  if (ready <= 0 || poll_set_[0].revents == 0) return Status::Ok();
  idle_spins_ = 0;
  auto message = link_->channel().Receive(10s);
  while (message.ok()) {
    WRIT_RETURN_IF_ERROR(Dispatch(*message));
    if (break_) return Status::Ok();
    message = link_->channel().Receive(0ms);
  }
  if (message.status().code() == ErrorCode::kTimeout) return Status::Ok();
  return Status::Transport("control connection to the receiver lost: " +
                           message.status().message());
}

namespace {

// Did a write of one of this delivery's chunks complete with success?
bool AnyChunkWritten(const DeliveryOutcome& out) {
  return std::any_of(
      out.work_completions.begin(), out.work_completions.end(),
      [](const WorkCompletionRecord& wc) { return wc.ok && wc.chunk != UINT64_MAX; });
}

// A receipt about `id` that does not parse: the session's connection cannot be trusted.
Status ReceiptRefused(const std::string& id, const Status& parsed) {
  return Status::Malformed("the receiver sent a receipt about " + id +
                           " that is not one: " + parsed.message());
}

}  // namespace

Session::Active* Session::Find(const std::string& id) {
  for (auto& a : active_) {
    if (!a->done && a->sub->out.delivery.id == id) return a.get();
  }
  return nullptr;
}

Status Session::Dispatch(protocol::Message& message) {
  if (auto* batch = std::get_if<protocol::Receipts>(&message)) {
    // Receipts ready at the same moment (protocol 3): each as if it came alone.
    for (protocol::Receipt& one : batch->receipts) {
      protocol::Message single(std::move(one));
      WRIT_RETURN_IF_ERROR(Dispatch(single));
    }
    return Status::Ok();
  }
  // The connection's standing window (protocol 4): about no delivery.
  if (const auto* ring = std::get_if<protocol::Ring>(&message)) return link_->AdoptRing(*ring);
  if (const auto* freed = std::get_if<protocol::SlotsFree>(&message)) {
    link_->ring().Free(*freed);
    return Status::Ok();
  }
  const std::string& id = IdOf(message);
  const auto* refuse = std::get_if<protocol::Refuse>(&message);
  if (Active* a = id.empty() ? nullptr : Find(id)) {
    if (!a->ending_by) Judge(*a, a->run->OnMessage(message));
    return Status::Ok();  // an ending delivery's late messages are dropped
  }
  if (lingering_.count(id) > 0) {
    // Read and dropped: the caller has its outcome already.
    const auto* wire = std::get_if<protocol::Receipt>(&message);
    auto receipt = wire ? ReadReceiptFacts(wire->json) : Result<ReceiptFacts>(Status::NotFound(""));
    if (wire != nullptr && !receipt.ok()) return ReceiptRefused(id, receipt.status());
    if (refuse || (receipt.ok() && receipt->rung == ReceiptRung::kRetained)) {
      lingering_.erase(id);
      NoteEnded(id);
    }
    return Status::Ok();
  }
  if (!id.empty() && std::find(ended_.begin(), ended_.end(), id) != ended_.end()) {
    // Late grants or refusals of a delivery that ended here. A late receipt is still
    // parsed: the link's decoder leaves that to this side (protocol::Limits).
    const auto* wire = std::get_if<protocol::Receipt>(&message);
    if (wire == nullptr) return Status::Ok();
    const Status parsed = ReadReceiptFacts(wire->json).status();
    return parsed.ok() ? parsed : ReceiptRefused(id, parsed);
  }
  if (refuse && id.empty()) return StatusForRefusal(*refuse, "(the session)");
  if (const auto* abort = std::get_if<protocol::Abort>(&message)) {
    return Status::Transport("the receiver aborted: " + abort->detail);
  }
  return Status::Malformed(std::string("unexpected '") +
                           std::string(protocol::MessageTypeName(message)) +
                           "' message from the receiver" +
                           (id.empty() ? "" : " about " + id + ", which is not in flight"));
}

Status Session::PollCompletions() {
  records_.clear();
  auto polled = link_->node().Poll(records_, 64);
  if (!polled.ok()) return polled.status();
  idle_spins_ = records_.empty() ? idle_spins_ + 1 : 0;
  std::vector<WriteSlot>& slots = link_->write_slots();
  for (const auto& record : records_) {
    auto slot = std::find_if(slots.begin(), slots.end(), [&](const WriteSlot& s) {
      return s.busy() && s.request_id == record.request_id();
    });
    if (slot == slots.end()) {
      // Not a request in flight: tcp drops the connection after an error record.
      if (!record.ok()) return Status::Transport("an error completion for no write in flight");
      continue;
    }
    auto owner = std::find_if(active_.begin(), active_.end(),
                              [&](const auto& a) { return a->run.get() == slot->owner; });
    if (owner == active_.end()) return Status::Internal("a write slot held by no delivery");
    Judge(**owner, (*owner)->run->OnRecord(*slot, record));
    if (break_) return Status::Ok();
  }
  return Status::Ok();
}

void Session::Judge(Active& a, const Status& status) {
  if (status.ok() || break_) return;
  const std::string& id = a.sub->out.delivery.id;
  if (a.run->broken()) {
    // A delivery already failing on its own keeps that status; a write that finally failed
    // takes the receiver's reason when it comes in time.
    Status own = a.ending_by             ? a.failure
                 : a.run->write_failed() ? RefusalWithin(a, kRefusalGrace)
                                         : Status::Ok();
    const Status& why = own.ok() ? status : own;
    break_ = PendingBreak{
        Status::Transport("session broken by delivery " + id + ": " + why.message()), &a, why};
    return;
  }
  if (a.ending_by) return;
  // Its own failure: make sure the receiver ended it and no write of it is still in flight.
  a.failure = status;
  a.ending_by = Clock::now() + kQuiesce;
  NoteEnded(id);
  if (a.run->announced() && !a.run->receiver_ended()) {
    Status sent = link_->channel().Send(protocol::Abort{id, status.message()});
    if (!sent.ok()) {
      break_ = PendingBreak{
          Status::Transport("session broken by delivery " + id + ": " + status.message()), &a,
          status};
    }
  }
}

Status Session::RefusalWithin(Active& a, std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Status::Ok();
    auto message = link_->channel().Receive(left);
    if (!message.ok()) return Status::Ok();
    const auto* refuse = std::get_if<protocol::Refuse>(&*message);
    if (refuse != nullptr && refuse->delivery_id == a.sub->out.delivery.id) {
      Status refused = a.run->OnMessage(*message);
      if (!refused.ok()) return refused;
    }
  }
}

void Session::Reap() {
  const auto now = Clock::now();
  for (auto& a : active_) {
    if (break_) return;
    if (a->ending_by) {
      if (a->run->WritesIdle()) {
        Complete(*a, a->failure);
      } else if (now > *a->ending_by) {
        break_ = PendingBreak{
            Status::Timeout("writes still in flight " + std::to_string(kQuiesce.count()) +
                            " s after delivery " + a->sub->out.delivery.id + " failed"),
            a.get(), a->failure};
      }
    } else if (a->run->Done()) {
      const std::string id = a->sub->out.delivery.id;
      if (!a->run->receiver_ended()) lingering_.insert(id);
      // It succeeded, but after an error record (a retried write) the session is not
      // trusted again: tcp drops the connection after one.
      const bool broke = a->run->broken();
      Complete(*a, Status::Ok());
      if (broke) {
        break_ = PendingBreak{Status::Transport("session broken by delivery " + id +
                                                ": an error completion was read"),
                              nullptr, Status::Ok()};
      }
    }
  }
  std::erase_if(active_, [](const auto& a) { return a->done; });
}

void Session::Complete(Active& a, const Status& status) {
  a.done = true;
  {
    MutexLock lock(mu_);
    std::erase(running_, a.sub.get());
  }
  Submission& s = *a.sub;
  s.out.status = status;
  // A failure before any chunk write completed moved nothing.
  if (!status.ok() && !AnyChunkWritten(s.out)) s.out.bytes_moved = false;
  if (status.ok()) {
    if (Status proved = ProveCachedDigest(s.options, s.prepared, s.out); !proved.ok()) {
      s.out.status = proved;  // no receipt is handed on for content the file lacks
      s.out.receipts.Clear();
      s.out.reached_rung.reset();
      s.out.reached_retention.reset();
    }
  }
  if (cache_ != nullptr) UpdateDigestCache(*cache_, s.options, s.prepared, s.out);
  a.run.reset();  // closes the source's registration
  auto state = s.state;
  DeliveryOutcome out = std::move(s.out);
  a.sub.reset();  // the source
  state->Set(std::move(out));
}

void Session::BreakNow() {
  PendingBreak why = std::move(*break_);
  std::deque<std::unique_ptr<Submission>> waiting;
  {
    MutexLock lock(mu_);
    if (health_.ok()) health_ = why.session;
    why.session = health_;
    waiting.swap(queue_);
  }
  // Writes in flight may still read a source: the fabric closes before any source does.
  (void)link_->Close();
  for (auto& a : active_) {
    if (a->done) continue;
    if (a.get() == why.culprit) {
      Complete(*a, why.culprit_status);
    } else if (!a->ending_by && a->run->Done()) {
      Complete(*a, Status::Ok());  // it reached what it asked for before the session broke
    } else {
      Complete(*a, a->ending_by ? a->failure : a->run->Fail(why.session));
    }
  }
  active_.clear();
  for (auto& s : waiting) {
    s->out.status = why.session;
    s->state->Set(std::move(s->out));
  }
}

void Session::NoteEnded(const std::string& id) {
  ended_.push_back(id);
  if (ended_.size() > kEndedKept) ended_.pop_front();
}

}  // namespace writ::sender
