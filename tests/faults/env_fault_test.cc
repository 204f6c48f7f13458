// Env fault injection against the real binary: `writ serve --test-store-faults`
// fails one file-system call of the durable store (a write, an fsync, an
// ENOSPC, ... at each step of retention). The sender must exit 6, a failed
// sync must make power-loss retention refused until restart, and a restart
// must find every earlier delivery intact and nothing corrupt reported.
//
// `make test` fails each step once (the first call of each operation; the
// in-process store_tests fail every call with every errno); with
// WRIT_FAULT_ITERATIONS set (the long run) every call of every step is failed
// with each errno.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "fault_harness.h"
#include "requirement.h"

namespace writ::testing::faults {
namespace {

struct Step {
  std::string op;
  bool is_sync;
};

bool LongRun() {
  const char* env = std::getenv("WRIT_FAULT_ITERATIONS");
  return env != nullptr && *env != '\0';
}

class EnvFaults : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "the tcp provider cannot serve here");
    // One data directory holding an earlier power-loss delivery, copied for every case.
    WritePatternFile(dir_.File("earlier"), 1, 300000);
    WritePatternFile(dir_.File("d"), 2, 200000);
    WritePatternFile(dir_.File("next"), 3, 1000);
    auto r = Receiver::Start(dir_.File("template"), dir_.File("template.err"));
    ASSERT_TRUE(r);
    CommandRun run = RunWrit({"send", dir_.File("earlier"), "--to", r->address(), "--id", "earlier",
                              "--retention", "power-loss", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    earlier_digest_ = run.json["delivery"]["digest"];
    ASSERT_EQ(r->Stop(), 0);
  }

  // Returns false when the fault was never injected (no such call in a delivery).
  bool RunCase(const std::string& retention, const Step& step, int nth, const std::string& err) {
    const std::string spec = step.op + "@" + std::to_string(nth) + "=" + err;
    SCOPED_TRACE(retention + " delivery, fault " + spec);
    const std::string data = dir_.File("case-" + std::to_string(++cases_));
    std::filesystem::copy(dir_.File("template"), data, std::filesystem::copy_options::recursive);
    const std::string err_path = data + ".err";
    auto faulty =
        Receiver::Start(data, err_path, {"--test-store-faults", spec, "--scrub-rate", "0"});
    if (!faulty) {
      ADD_FAILURE() << "no receiver";
      return false;
    }
    // 50 KiB chunks: four of them, so a delivery has several writes.
    CommandRun sent = RunWrit({"send", dir_.File("d"), "--to", faulty->address(), "--id", "d",
                               "--chunk-size", "50KiB", "--retention", retention, "--json"});
    const bool injected =
        faulty->Stderr().find("test fault injected: " + step.op) != std::string::npos;
    if (!injected) {
      EXPECT_EQ(sent.exit_code, 0) << "no fault, so the delivery is retained: " << sent.err;
      EXPECT_EQ(faulty->Stop(), 0);
      return false;
    }
    EXPECT_EQ(sent.exit_code, 6) << "the class was not reached: " << sent.err;
    EXPECT_NE(sent.err.find("retention"), std::string::npos) << sent.err;
    for (const std::string& rung : Rungs(sent.json)) EXPECT_NE(rung, "retained") << sent.err;

    // Sticky: after a failed sync, power-loss is refused (even though the next sync would
    // work) and process-restart still works; after any other failure power-loss works.
    CommandRun next = RunWrit({"send", dir_.File("next"), "--to", faulty->address(), "--id",
                               "next-pl", "--retention", "power-loss"});
    if (step.is_sync) {
      EXPECT_EQ(next.exit_code, 6) << next.err;
      EXPECT_NE(next.err.find("restart the receiver"), std::string::npos) << next.err;
      EXPECT_NE(faulty->Stderr().find("power-loss retention is refused from now on"),
                std::string::npos)
          << faulty->Stderr();
      CommandRun pr = RunWrit({"send", dir_.File("next"), "--to", faulty->address(), "--id",
                               "next-pr", "--retention", "process-restart"});
      EXPECT_EQ(pr.exit_code, 0) << pr.err;
    } else {
      EXPECT_EQ(next.exit_code, 0) << "a failed write is not sticky: " << next.err;
    }
    CommandRun q = RunWrit({"query", "earlier", "--to", faulty->address(), "--json"});
    EXPECT_EQ(q.exit_code, 0);
    EXPECT_EQ(faulty->Stop(), 0);

    // Restart without faults, re-hashing everything: nothing corrupt, everything earlier intact,
    // and `d` either unknown or intact.
    auto clean = Receiver::Start(data, data + ".restart.err", {"--verify-on-start", "all"});
    if (!clean) {
      ADD_FAILURE() << "no receiver after the fault";
      return true;
    }
    const Receiver::Recovery rec = clean->ParseRecovery();
    EXPECT_TRUE(rec.found);
    EXPECT_EQ(rec.corrupt, 0u) << clean->Stderr();
    CommandRun check = RunWrit({"store", "check", "--data", data});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    CommandRun cat = RunWrit({"store", "cat", "earlier", "--data", data});
    EXPECT_EQ(cat.exit_code, 0);
    EXPECT_TRUE(cat.out == ReadFile(dir_.File("earlier"))) << "the earlier delivery is intact";
    CommandRun qd = RunWrit({"query", "d", "--to", clean->address(), "--json"});
    if (qd.exit_code == 0) {
      CommandRun catd = RunWrit({"store", "cat", "d", "--data", data});
      EXPECT_EQ(catd.exit_code, 0);
      EXPECT_TRUE(catd.out == ReadFile(dir_.File("d"))) << "reported retained, so intact";
    } else {
      EXPECT_EQ(qd.exit_code, 1);
    }
    if (step.is_sync) {
      CommandRun again = RunWrit({"send", dir_.File("next"), "--to", clean->address(), "--id",
                                  "after-restart", "--retention", "power-loss"});
      EXPECT_EQ(again.exit_code, 0)
          << "restarted and re-checked: power-loss is offered again. " << again.err;
    }
    EXPECT_EQ(clean->Stop(), 0);
    std::error_code ec;
    std::filesystem::remove_all(data, ec);
    return true;
  }

  TempDir dir_;
  std::string earlier_digest_;
  int cases_ = 0;
};

TEST_P(EnvFaults, EveryStepOfRetentionFailsCleanly) {
  const std::string retention = GetParam();
  std::vector<Step> steps = {
      {"open", false}, {"write", false}, {"rename", false}, {"index-write", false}};
  if (retention == "power-loss") {
    steps.push_back({"fdatasync", true});
    steps.push_back({"syncdir", true});
    steps.push_back({"index-sync", true});
  }
  int injected = 0;
  for (const Step& step : steps) {
    std::vector<std::string> errnos;
    if (LongRun()) {
      errnos = {"EIO", "ENOSPC"};
    } else {
      errnos = {step.is_sync || step.op == "open" || step.op == "rename" ? "EIO" : "ENOSPC"};
    }
    for (const std::string& err : errnos) {
      const int last =
          LongRun() ? 40 : (step.op == "index-sync" ? 2 : 1);  // @2: the receipt's commit
      for (int nth = 1; nth <= last; ++nth) {
        if (!RunCase(retention, step, nth, err)) break;
        ++injected;
        if (HasFailure()) return;
      }
    }
  }
  std::cout << retention << ": " << injected
            << " injected faults, each exit 6, nothing corrupt after restart" << std::endl;
  EXPECT_GE(injected, static_cast<int>(steps.size()));
}

INSTANTIATE_TEST_SUITE_P(Classes, EnvFaults, ::testing::Values("power-loss", "process-restart"),
                         [](const auto& info) {
                           return info.param == "power-loss" ? std::string("PowerLoss")
                                                             : std::string("ProcessRestart");
                         });

}  // namespace
}  // namespace writ::testing::faults
