// Receiver::Shutdown with a slow processing step (the C++ API; the CLI registers none):
// a step that finishes within the drain timeout is drained, one that is still running at
// the deadline sees DeliveryView::stop_requested, and its sender is told why.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "requirement.h"
#include "writ/receiver.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A step that runs for `length` unless the receiver asks it to stop; `started` once it runs.
ProcessingStep SlowStep(Clock::duration length, std::atomic<bool>& started) {
  return ProcessingStep{"slow", [length, &started](const DeliveryView& view) -> Status {
                          started = true;
                          const auto until = Clock::now() + length;
                          while (Clock::now() < until) {
                            if (view.stop_requested && view.stop_requested()) {
                              return Status::Internal("stopped by the receiver");
                            }
                            std::this_thread::sleep_for(5ms);
                          }
                          return Status::Ok();
                        }};
}

struct StepRun {
  std::unique_ptr<Receiver> receiver;
  DeliveryOutcome outcome;
  std::thread sender;
  ~StepRun() {
    if (receiver) (void)receiver->Stop();
    if (sender.joinable()) sender.join();
  }
};

// Starts a receiver with `step` and a sender of one delivery up to `processed`; returns
// once the step runs.
void StartAndProcess(const TempDir& dir, ProcessingStep step, std::atomic<bool>& started,
                     StepRun& run) {
  ReceiverOptions options;
  options.provider = "tcp";
  options.identity_dir = dir.File("identity");
  options.processing = std::move(step);
  auto receiver = Receiver::Start(options);
  ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
  run.receiver = std::move(receiver).value();
  WritePatternFile(dir.File("payload"), 5, 1 << 20);
  SendOptions send;
  send.to = run.receiver->listen_address();
  send.id = "step";
  send.until = Rung::kProcessed;
  run.sender = std::thread(
      [&run, send, path = dir.File("payload")] { run.outcome = writ::Send(path, send); });
  for (int i = 0; i < 3000 && !started; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(started) << "the processing step never ran";
}

TEST(ShutdownProcessing, AStepThatEndsWithinTheDrainIsDrained) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::atomic<bool> started{false};
  StepRun run;
  StartAndProcess(dir, SlowStep(300ms, started), started, run);
  ASSERT_TRUE(run.receiver);
  auto summary = run.receiver->Shutdown(30s);
  run.sender.join();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->drained, std::vector<std::string>{"step"});
  EXPECT_TRUE(summary->aborted.empty());
  EXPECT_FALSE(summary->deadline_passed);
  EXPECT_TRUE(run.outcome.status.ok()) << run.outcome.status.ToString();
  EXPECT_EQ(run.outcome.reached_rung, ReceiptRung::kProcessed);
}

TEST(ShutdownProcessing, AStepStillRunningAtTheDeadlineIsStoppedAndItsSenderTold) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  std::atomic<bool> started{false};
  StepRun run;
  StartAndProcess(dir, SlowStep(10min, started), started, run);
  ASSERT_TRUE(run.receiver);
  const auto asked = Clock::now();
  auto summary = run.receiver->Shutdown(500ms);
  const auto took = Clock::now() - asked;
  run.sender.join();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_LT(took, 500ms + 5s) << "Shutdown did not return within its bound";
  EXPECT_EQ(summary->aborted, std::vector<std::string>{"step"});
  EXPECT_TRUE(summary->drained.empty());
  EXPECT_TRUE(summary->deadline_passed);
  EXPECT_EQ(run.outcome.status.code(), ErrorCode::kRefused) << run.outcome.status.ToString();
  EXPECT_NE(run.outcome.status.message().find("shutting down"), std::string::npos)
      << run.outcome.status.ToString();
  EXPECT_EQ(run.outcome.reached_rung, ReceiptRung::kValidated);
}

}  // namespace
}  // namespace writ::testing
