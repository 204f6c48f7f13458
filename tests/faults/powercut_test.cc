// Power loss: the receiver's data directory lives on powercut_fs, which keeps
// everything not made durable in a volatile layer. At a random moment the test
// cuts the power (the layer is discarded and the file system is gone), SIGKILLs
// `writ serve`, mounts the file system again from what was durable, restarts
// the receiver and checks: every power-loss receipt survives with identical
// bytes; process-restart deliveries may vanish but are never reported retained
// when corrupt.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "fault_harness.h"
#include "powercut_control.h"
#include "requirement.h"

namespace writ::testing::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(PowerCut, EveryPowerLossReceiptSurvivesCutsAtRandomMoments) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const std::string state = dir.File("fs-state"), mnt = dir.File("mnt");
  std::string why;
  auto fs = PowerCutFs::Mount(state, mnt, &why);
  REQUIRE_OR_FAIL(fs, "cannot mount a FUSE file system here: " << why);

  const int iterations = Iterations(10);
  const uint64_t seed = Seed("powercut");
  std::mt19937_64 rng(seed);
  const std::string data = mnt + "/data";
  const std::string files = dir.File("src");
  std::filesystem::create_directories(files);
  // The receipt-signing key lives off the cut file system: this test is about the store.
  const std::vector<std::string> extra = {"--identity", dir.File("identity")};
  Ledger ledger;
  Tally tally;
  const auto started = Clock::now();

  auto receiver = Receiver::Start(data, dir.File("serve-0.err"), extra);
  ASSERT_TRUE(receiver);
  for (int it = 0; it < iterations; ++it) {
    SCOPED_TRACE("iteration " + std::to_string(it) + " of seed " + std::to_string(seed));
    Stream stream(receiver->address(), files, "p" + std::to_string(it),
                  seed + static_cast<uint64_t>(it), 4, {"process-restart", "power-loss"});
    EXPECT_TRUE(WaitForFailureMoment(stream, it, rng)) << "the senders stalled";
    uint64_t discarded = 0;
    const std::string cut = fs->Cut(&discarded);  // power is gone: unsynced state discarded
    tally.cut_discarded_bytes += discarded;
    receiver->Kill();  // and the receiver with it
    const std::vector<Delivery> done = stream.Stop();
    fs->Unmount();
    fs = PowerCutFs::Mount(state, mnt, &why);  // power back: only what was durable
    ASSERT_TRUE(fs) << why;

    std::vector<std::string> recent;
    uint64_t receipted_pl_now = 0;
    for (const Delivery& d : done) {
      ledger.all[d.id] = d;
      recent.push_back(d.id);
      ++tally.attempted;
      if (!d.receipted) continue;
      if (d.retention == "power-loss") {
        ++tally.receipted_pl;
        ++receipted_pl_now;
        ledger.must_survive.insert(d.id);
      } else {
        ++tally.receipted_pr;
        ledger.may_vanish.insert(d.id);
      }
    }
    receiver = Receiver::Start(data, dir.File("serve-" + std::to_string(it + 1) + ".err"), extra);
    ASSERT_TRUE(receiver);
    CheckAfterRestart(*receiver, data, ledger, recent, rng, tally);
    ++tally.iterations;
    if (HasFailure()) {
      std::cout << "last cut: " << cut << "\nreceiver's log:\n"
                << ReadFile(dir.File("serve-" + std::to_string(it + 1) + ".err"))
                << "receiver's exit status (-1: still running, then stopped): " << receiver->Stop()
                << std::endl;
      break;
    }
    tally.survived += receipted_pl_now;
    // Progress of a long run, so that one stopped early still says how far it got clean.
    if (tally.iterations % 50 == 0) {
      std::cout << "powercut: after " << tally.iterations << " cuts (seed " << seed
                << "): " << tally.Line() << std::endl;
    }
  }
  EXPECT_EQ(receiver->Stop(), 0);
  tally.survived += ledger.may_vanish.size();  // process-restart receipts that outlived every cut
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count();
  std::cout << "powercut: " << tally.Line() << "; " << seconds << " s" << std::endl;
  EXPECT_GE(tally.receipted_pl + tally.receipted_pr, static_cast<uint64_t>(iterations) / 2)
      << "too few receipts for the test to mean anything";
  EXPECT_GT(tally.receipted_pl, 0u) << "no power-loss receipt was ever put to the test";
  EXPECT_GT(tally.cut_discarded_bytes, 0u)
      << "the cuts never dropped anything: the test proves nothing";
  EXPECT_EQ(tally.corrupt_reported, 0u);
}

// The key id a serve said it signs with (its stderr), once it has said it; "" otherwise.
std::string SigningKeyOf(const std::string& err_path, std::chrono::milliseconds wait) {
  const std::string marker = "receipts are signed with key ";
  for (const auto until = Clock::now() + wait;;) {
    const std::string err = ReadFile(err_path);
    const size_t at = err.find(marker);
    if (at != std::string::npos) return err.substr(at + marker.size(), 16);
    if (Clock::now() >= until) return "";
    std::this_thread::sleep_for(20ms);
  }
}

// The identity made at a receiver's first start lives on the cut file system (DATA/identity,
// the default). A cut at any moment of that start, or right after it: once the serve has
// said which key signs, the serve started on what survived signs with the same key (before,
// neither identity/ nor DATA was synced after the rename and mkdir, and a cut made a new
// key while the index kept receipts signed by the lost one); before that, it starts.
TEST(PowerCut, TheIdentityOfAFirstStartSurvivesACutAtEveryPoint) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
  TempDir dir;
  const uint64_t seed = Seed("powercut-identity");
  std::mt19937_64 rng(seed);
  const int iterations = Iterations(6);
  int kept = 0;
  for (int it = 0; it < iterations; ++it) {
    SCOPED_TRACE("iteration " + std::to_string(it) + " of seed " + std::to_string(seed));
    const std::string state = dir.File("state-" + std::to_string(it));
    const std::string mnt = dir.File("mnt-" + std::to_string(it));
    std::string why;
    auto fs = PowerCutFs::Mount(state, mnt, &why);
    REQUIRE_OR_FAIL(fs, "cannot mount a FUSE file system here: " << why);
    const std::string data = mnt + "/data";
    const std::string err = dir.File("first-" + std::to_string(it) + ".err");
    auto first = StartWrit({"serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--data", data,
                            "--window-pool", "64MiB", "--window-size", "4MiB"},
                           err);
    ASSERT_TRUE(first);
    // Even iterations cut once the key is named (the point every receipt depends on); odd
    // ones at a random moment of the start, before or after it.
    std::string key;
    if (it % 2 == 0) {
      key = SigningKeyOf(err, 120s);
      ASSERT_NE(key, "") << ReadFile(err);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
      key = SigningKeyOf(err, 0ms);
    }
    fs->Cut();
    first->Kill(SIGKILL);
    (void)first->Wait(60s);
    fs->Unmount();
    fs = PowerCutFs::Mount(state, mnt, &why);
    ASSERT_TRUE(fs) << why;
    const std::string again_err = dir.File("again-" + std::to_string(it) + ".err");
    auto again = Receiver::Start(data, again_err);
    ASSERT_TRUE(again) << "the serve must start on what survived";
    const std::string after = SigningKeyOf(again_err, 60s);
    if (!key.empty()) {
      EXPECT_EQ(after, key) << "the cut changed the receiver's identity";
      ++kept;
    }
    EXPECT_EQ(again->Stop(), 0);
    fs->Unmount();
    if (HasFailure()) break;
  }
  std::cout << "powercut-identity: " << iterations << " cuts, " << kept
            << " after the key was named, 0 identities changed; seed " << seed << std::endl;
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace writ::testing::faults
