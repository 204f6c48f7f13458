// An inbound run's phases and its one way to end (src/receiver/inbound_run.h), driven without
// a fabric: an empty delivery needs no window, so the run goes from its announce to its end
// on a stand-in connection (RunHost) that records what it is asked to send, and when.
#include "receiver/inbound_run.h"

#include <gtest/gtest.h>

#include <span>

#include "receiver/window_pool.h"
#include "vocabulary/digest.h"

namespace writ::receiver {
namespace {

class RunTestWriter : public store::PayloadWriter {
 public:
  explicit RunTestWriter(Status commit) : commit_(std::move(commit)) {}
  Status Write(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status Read(uint64_t, std::span<uint8_t>) override { return Status::Ok(); }
  void SetDigest(std::vector<uint8_t>) override {}
  Result<store::RetentionEvidence> Commit(const std::vector<std::string>&) override {
    if (!commit_.ok()) return commit_;
    return store::RetentionEvidence{};
  }

 private:
  Status commit_;
};

class RunTestStore : public store::Store {
 public:
  bool Offers(RetentionClass) const override { return true; }
  Result<std::optional<store::RetainedDelivery>> Lookup(const std::string&) override {
    return std::optional<store::RetainedDelivery>();
  }
  Result<std::optional<store::RetainedDelivery>> LookupVerified(const std::string&) override {
    return std::optional<store::RetainedDelivery>();
  }
  Result<std::unique_ptr<store::PayloadWriter>> Begin(store::DeliveryMeta,
                                                      RetentionClass) override {
    return Status::Internal("not used");
  }
  Status AppendReceipt(const std::string&, const std::string& json) override {
    appended.push_back(json);
    return Status::Ok();
  }
  Status Read(const std::string&, uint64_t, std::span<uint8_t>) override { return Status::Ok(); }
  Result<store::Removal> Remove(const std::string&, bool, uint64_t) override {
    return Status::Internal("not used");
  }
  Result<std::vector<std::string>> Expired(uint64_t) override { return std::vector<std::string>(); }
  std::vector<std::string> appended;
};

// The connection's side, recording each thing a run asks of it with the run's phase then and
// whether the run still held its id claim.
class RecordingHost : public RunHost {
 public:
  RecordingHost() {
    core_.store = std::make_unique<RunTestStore>();
    core_.digests = DigestPool::Start(1).value();
    core_.options.grant_unused_timeout = std::chrono::milliseconds(1000);
  }
  ReceiverCore& core() override { return core_; }
  Status Send(const protocol::Message& message) override {
    const auto* refuse = std::get_if<protocol::Refuse>(&message);
    Note(refuse != nullptr ? "refuse " + std::string(protocol::RefuseReasonName(refuse->reason))
                           : "send");
    return Status::Ok();
  }
  void Issue(const Receipt& receipt) override {
    Note("issue " + std::string(ReceiptRungName(receipt.rung)));
  }
  Result<std::string> SignIssued(const Receipt* with) override {
    Note(with != nullptr ? "sign with " + std::string(ReceiptRungName(with->rung)) : "sign");
    return std::string(with != nullptr ? "{\"retained\":1}" : "");
  }
  void Queue(const std::string&, std::string json) override { Note("queue " + json); }
  Status FlushReceipts() override {
    Note("flush");
    return Status::Ok();
  }
  void Tell(const std::string& line) override { told.push_back(line); }
  Status GrantRingOnce() override {
    Note("ring");
    return Status::Ok();
  }
  const std::string& sender() const override { return sender_; }
  const std::shared_ptr<Inbox>& inbox() const override { return inbox_; }
  fabric::Peer writer() const override { return fabric::Peer{}; }
  TagOwners& tag_owners() override { return owners_; }
  bool sender_gone() const override { return false; }
  void NeedFabricThread() override {
    ++fabric_thread_needed;
    fabric_thread_needed_after = events.size();
  }

  int fabric_thread_needed = 0;
  size_t fabric_thread_needed_after = 0;  // how many events had been recorded then

  // An empty delivery `id`, its digest announced as `digest` (the true one when empty).
  std::unique_ptr<InboundRun> Start(const std::string& id, std::vector<uint8_t> digest = {},
                                    Status commit = Status::Ok(),
                                    RetentionClass retention = RetentionClass::kVolatile) {
    protocol::Announce a;
    a.retention = retention;
    a.delivery_id = id;
    a.bytes = 0;
    a.chunk_size = 1024;
    a.rule = Rule::kCrc32c;
    a.until = Rung::kValidated;
    a.digest = digest.empty() ? EmptyDigest() : std::move(digest);
    auto admitted = AdmittedDelivery::Claim(core_, a, sender_);
    auto delivery =
        std::make_unique<InboundDelivery>(a, core_.digests->Open(a.rule, 0, nullptr).value(),
                                          std::make_unique<RunTestWriter>(std::move(commit)));
    auto run = std::make_unique<InboundRun>(*this, std::move(delivery),
                                            std::move(std::get<AdmittedDelivery>(admitted)),
                                            InboundRun::Held::kNo);
    run_ = run.get();
    return run;
  }
  static std::vector<uint8_t> EmptyDigest() {
    return vocabulary::DigestOf(Rule::kCrc32c, std::span<const uint8_t>()).value();
  }
  protocol::Commit CommitOf(const InboundRun& run, std::vector<uint8_t> digest = {}) const {
    return protocol::Commit{run.id(), digest.empty() ? EmptyDigest() : std::move(digest), {}};
  }

  std::vector<std::string> events;  // "<what> @<phase>[ held]"
  std::vector<std::string> told;

 private:
  void Note(const std::string& what) {
    const bool held = core_.IdActive(run_->id());
    events.push_back(what + " @" + std::string(RunPhaseName(run_->phase())) +
                     (held ? " held" : ""));
  }

  ReceiverCore core_;
  std::string sender_ = "127.0.0.1";
  std::shared_ptr<Inbox> inbox_;
  TagOwners owners_;
  InboundRun* run_ = nullptr;
};

TEST(InboundRun, AnEmptyDeliveryGoesThroughItsPhasesAndIsToldRetainedBeforeItsClaimsGoBack) {
  RecordingHost host;
  auto run = host.Start("empty");
  EXPECT_EQ(run->phase(), RunPhase::kAnnounced);
  EXPECT_TRUE(host.core().IdActive("empty"));
  EXPECT_EQ(host.core().UsageOf("127.0.0.1", SenderUsage::kDeliveries), 1u);

  RunStep step = run->Advance();
  EXPECT_TRUE(step.status.ok());
  EXPECT_FALSE(step.ended) << "no commit yet";
  EXPECT_EQ(run->phase(), RunPhase::kReceived) << "no chunk to wait for";

  step = run->OnCommit(host.CommitOf(*run));
  EXPECT_FALSE(step.ended);
  EXPECT_TRUE(run->committed());
  step = run->Advance();
  EXPECT_TRUE(step.status.ok());
  EXPECT_FALSE(step.ended) << "volatile: its `retained` waits for the pass's signature";
  EXPECT_EQ(run->phase(), RunPhase::kSigning);
  EXPECT_FALSE(run->Advance().ended) << "nothing more to do until it is signed";
  std::optional<receipt::UnsignedReceipt> to_sign = run->TakeReceiptToSign();
  ASSERT_TRUE(to_sign.has_value());
  EXPECT_NE(to_sign->text.find("\"rung\":\"retained\""), std::string::npos) << to_sign->text;
  EXPECT_FALSE(run->TakeReceiptToSign().has_value()) << "taken once";
  step = run->OnRetainedSigned("{\"retained\":1}");
  EXPECT_TRUE(step.status.ok());
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(run->phase(), RunPhase::kEnded);
  EXPECT_EQ(host.events, (std::vector<std::string>{
                             "issue received @received held",
                             "issue validated @validated held",
                             "ring @signing held",
                             "queue {\"retained\":1} @signing held",
                             "flush @signing held",
                         }))
      << "the sender is told (ring first, then the retained receipt) while the run still "
         "holds its id; nothing is sent after";
  EXPECT_FALSE(host.core().IdActive("empty")) << "the id claim goes back as the run ends";
  EXPECT_EQ(host.core().UsageOf("127.0.0.1", SenderUsage::kDeliveries), 0u);
  const EndedDelivery ended = run->Ended("key", "peer");
  EXPECT_EQ(ended.outcome, DeliveryOutcome::kRetained);
  EXPECT_TRUE(ended.retained);
  EXPECT_EQ(ended.reached, ReceiptRung::kRetained);
  EXPECT_EQ(ended.ladder_reached, ReceiptRung::kValidated);
  EXPECT_EQ(host.fabric_thread_needed, 0)
      << "in memory and without a window: nothing keeps the connection's thread from the fabric";
}

// A commit that syncs to the device may take milliseconds: the run asks for the fabric's own
// thread first, so that a connection leading its progress loop hands it back.
TEST(InboundRun, ACommitToTheDeviceAsksForTheFabricsThreadFirst) {
  RecordingHost host;
  auto run = host.Start("durable", {}, Status::Ok(), RetentionClass::kPowerLoss);
  EXPECT_FALSE(run->Advance().ended);
  EXPECT_FALSE(run->OnCommit(host.CommitOf(*run)).ended);
  EXPECT_EQ(host.fabric_thread_needed, 0) << "not before the commit";
  RunStep step = run->Advance();
  EXPECT_TRUE(step.status.ok()) << step.status.ToString();
  EXPECT_EQ(host.fabric_thread_needed, 1);
  ASSERT_GT(host.events.size(), host.fabric_thread_needed_after);
  EXPECT_EQ(host.events[host.fabric_thread_needed_after], "sign @committing held")
      << "asked before the receipts are signed for the commit's index row";
}

TEST(InboundRun, AValidationFailureIsRefusedBeforeTheRunGivesBackItsClaims) {
  RecordingHost host;
  const std::vector<uint8_t> wrong{1, 2, 3, 4};
  auto run = host.Start("wrong", wrong);
  EXPECT_FALSE(run->OnCommit(host.CommitOf(*run, wrong)).ended);
  RunStep step = run->Advance();
  ASSERT_TRUE(step.ended);
  ASSERT_FALSE(host.events.empty());
  EXPECT_EQ(host.events.back(), "refuse validation @received held");
  EXPECT_FALSE(host.core().IdActive("wrong"));
  const EndedDelivery ended = run->Ended("", "peer");
  EXPECT_EQ(ended.outcome, DeliveryOutcome::kRefused);
  EXPECT_EQ(ended.reason, "validation");
  EXPECT_NE(ended.detail.find("do not match the announced crc32c digest"), std::string::npos)
      << ended.detail;
}

TEST(InboundRun, AnUnusableCommitEndsTheRunRefused) {
  RecordingHost host;
  auto run = host.Start("commit");
  RunStep step = run->OnCommit(host.CommitOf(*run, {9, 9, 9, 9}));
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(run->phase(), RunPhase::kEnded);
  EXPECT_EQ(host.events, std::vector<std::string>{"refuse validation @announced held"});
  EXPECT_FALSE(host.core().IdActive("commit"));
}

TEST(InboundRun, AFailedStoreCommitIsRefusedAndNothingIsRetained) {
  RecordingHost host;
  auto run = host.Start("nospace", {}, Status::Refused("no space"));
  EXPECT_FALSE(run->OnCommit(host.CommitOf(*run)).ended);
  RunStep step = run->Advance();
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(host.events.back().rfind("refuse ", 0), 0u) << host.events.back();
  EXPECT_NE(host.events.back().find("@committing held"), std::string::npos);
  EXPECT_EQ(run->Ended("", "").outcome, DeliveryOutcome::kRefused);
  EXPECT_FALSE(run->Ended("", "").retained);
  EXPECT_FALSE(host.core().IdActive("nospace"));
}

TEST(InboundRun, AMissingCommitTimesOutRefusedAndTold) {
  RecordingHost host;
  auto run = host.Start("late");
  EXPECT_FALSE(run->Advance().ended);
  EXPECT_FALSE(run->CheckTimeouts(InboundRun::Clock::now()).ended);
  RunStep step = run->CheckTimeouts(run->Deadline() + std::chrono::milliseconds(1));
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(host.events.back(), "refuse limit @received held");
  ASSERT_EQ(host.told.size(), 1u);
  EXPECT_NE(host.told[0].find("every chunk landed but no commit came"), std::string::npos)
      << host.told[0];
  EXPECT_FALSE(host.core().IdActive("late"));
}

TEST(InboundRun, AnAbortedRunSendsNothingAndGivesBackItsClaims) {
  RecordingHost host;
  auto run = host.Start("gone");
  RunStep step = run->EndWith(RunEnding::Aborted("the sender aborted it"));
  ASSERT_TRUE(step.ended);
  EXPECT_TRUE(host.events.empty());
  EXPECT_FALSE(host.core().IdActive("gone"));
  const EndedDelivery ended = run->Ended("", "");
  EXPECT_EQ(ended.outcome, DeliveryOutcome::kAborted);
  EXPECT_EQ(ended.detail, "the sender aborted it");
}

// `written` is a sender's word for its own writes where notifications name no writer; on a
// provider that names them it is a protocol error, and there a window the delivery does not
// hold is one too.
TEST(InboundRun, AWrittenIsRefusedWhereNotificationsNameTheirWriter) {
  RecordingHost host;
  auto run = host.Start("named");
  RunStep step = run->OnWritten(protocol::Written{"named", 5, {0}});
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(host.events.back(), "refuse malformed @announced held");
  EXPECT_FALSE(host.core().IdActive("named"));
}

TEST(InboundRun, AWrittenForAWindowTheDeliveryDoesNotHoldIsRefused) {
  RecordingHost host;
  host.core().writes_attested = true;
  auto run = host.Start("attested");
  RunStep step = run->OnWritten(protocol::Written{"attested", 5, {0}});
  ASSERT_TRUE(step.ended);
  EXPECT_EQ(host.events.back(), "refuse malformed @announced held");
  EXPECT_NE(run->Ended("", "").detail.find("written for window 5"), std::string::npos)
      << run->Ended("", "").detail;
}

// A window's leases (leases.h) go back when the window ends, wherever it was moved to: the
// pool's window, the tag's binding and the tag's route to its run.
TEST(InboundRun, AWindowsLeasesGoBackWhenTheWindowEnds) {
  RecordingHost host;
  auto run = host.Start("leases");
  auto pool = WindowPool::Create(2 << 20, 1 << 20).value();
  auto inbox = Inbox::Create().value();
  NotificationRouter router;
  TagOwners owners;
  auto window = pool->TryAcquire(-1);
  ASSERT_TRUE(window.has_value());
  auto tag = router.Bind(inbox, fabric::Peer{});
  ASSERT_TRUE(tag.has_value());
  {
    std::vector<LiveWindow> windows(1);
    windows[0].pool = PoolLease(*pool, window->index);
    windows[0].route = TagLease(router, owners, *tag, *run);
    std::vector<LiveWindow> moved;
    moved.push_back(std::move(windows[0]));
    windows.clear();
    EXPECT_EQ(pool->in_use(), 1u) << "a moved-from window holds nothing to give back";
    EXPECT_EQ(owners.at(*tag), run.get());
  }
  EXPECT_EQ(pool->in_use(), 0u);
  EXPECT_TRUE(owners.empty());
  router.Route(fabric::Peer{}, NotificationValue(*tag, 0));
  EXPECT_EQ(router.unrouted(), 1u) << "the tag is no longer bound";
}

}  // namespace
}  // namespace writ::receiver
