// Process crash: SIGKILL the real `writ serve --data` at a random moment while
// senders stream process-restart and power-loss deliveries, restart it, and
// check that every delivery that got a retained receipt is returned by `query`
// and `store cat` with identical bytes, and that nothing not intact is
// reported retained. Both classes cover a process crash.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "fault_harness.h"
#include "requirement.h"

namespace writ::testing::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(Crash, ReceiverKilledAtRandomMomentsKeepsEveryReceiptedDelivery) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  const int iterations = Iterations(10);
  const uint64_t seed = Seed("crash");
  std::mt19937_64 rng(seed);
  TempDir dir;
  const std::string data = dir.File("data");
  const std::string files = dir.File("src");
  std::filesystem::create_directories(files);
  Ledger ledger;
  Tally tally;
  const auto started = Clock::now();
  const int retire_every = std::min(100, std::max(2, iterations / 2));
  const size_t keep = iterations >= 200 ? 1000 : 5;
  int retirements = 0;

  auto receiver = Receiver::Start(data, dir.File("serve-0.err"));
  ASSERT_TRUE(receiver);
  for (int it = 0; it < iterations; ++it) {
    SCOPED_TRACE("iteration " + std::to_string(it) + " of seed " + std::to_string(seed));
    Stream stream(receiver->address(), files, "c" + std::to_string(it),
                  seed + static_cast<uint64_t>(it), 4, {"process-restart", "power-loss"});
    EXPECT_TRUE(WaitForFailureMoment(stream, it, rng)) << "the senders stalled";
    receiver->Kill();
    const std::vector<Delivery> done = stream.Stop();

    std::vector<std::string> recent;
    uint64_t receipted_now = 0;
    for (const Delivery& d : done) {
      ledger.all[d.id] = d;
      recent.push_back(d.id);
      ++tally.attempted;
      if (!d.receipted) {
        EXPECT_NE(d.exit_code, 0) << d.id << ": exit 0 without a retained receipt\n" << d.err;
        continue;
      }
      ++receipted_now;
      ledger.must_survive.insert(d.id);
      (d.retention == "power-loss" ? tally.receipted_pl : tally.receipted_pr)++;
    }
    receiver = Receiver::Start(data, dir.File("serve-" + std::to_string(it + 1) + ".err"));
    ASSERT_TRUE(receiver);
    // The whole store is re-hashed every 50th iteration and at the end; in between, this
    // iteration's deliveries and a random sample of older ones, so that a long run is linear.
    const bool whole_store = (it + 1) % 50 == 0 || it + 1 == iterations;
    CheckAfterRestart(*receiver, data, ledger, recent, rng, tally, whole_store);
    ++tally.iterations;
    if (HasFailure()) {  // the first failure, with its seed, is the useful one
      std::cout << "receiver's log (" << dir.File("serve-" + std::to_string(it + 1) + ".err")
                << "):\n"
                << ReadFile(dir.File("serve-" + std::to_string(it + 1) + ".err"))
                << "receiver's exit status (-1: still running, then stopped): " << receiver->Stop()
                << std::endl;
      break;
    }
    tally.survived += receipted_now;
    // Every 100th iteration (in a short run, halfway) retires all but 1,000 retained
    // deliveries (in a short run, 5), chosen at random among those that survived every kill
    // so far: recovery re-hashes every process-restart payload at each start, so a store that
    // only grows would make a long run quadratic.
    if ((it + 1) % retire_every == 0 && it + 1 < iterations) {
      receiver = RetireAllBut(std::move(receiver), data,
                              dir.File("serve-" + std::to_string(it + 1) + "r.err"), keep, ledger,
                              rng, tally);
      ++retirements;
      ASSERT_TRUE(receiver);
    }
    // Progress of a long run, so that one stopped early still says how far it got clean.
    if (tally.iterations % 50 == 0) {
      std::cout << "crash: after " << tally.iterations << " kills (seed " << seed
                << "): " << tally.Line() << std::endl;
    }
  }
  EXPECT_EQ(receiver->Stop(), 0);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count();
  std::cout << "crash: " << tally.Line() << "; " << seconds << " s" << std::endl;
  EXPECT_GE(tally.receipted_pl + tally.receipted_pr, static_cast<uint64_t>(iterations) / 2)
      << "too few receipts for the test to mean anything";
  EXPECT_EQ(tally.corrupt_reported, 0u);
  if (iterations >= 4) {
    // How many it removes depends on how many the senders got retained by then (few under
    // a sanitizer); that the stop, the removals and the restart ran is what is asserted.
    EXPECT_GT(retirements, 0) << "the loop never retired deliveries";
  }
}

}  // namespace
}  // namespace writ::testing::faults
