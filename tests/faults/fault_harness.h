// Shared by the crash, power-cut and fault-injection tests: a `writ serve
// --data` child whose stderr is kept, senders streaming deliveries while it
// runs, and the checks that every receipted delivery is intact after a restart.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "writ_harness.h"

namespace writ::testing::faults {

// Iterations of a fault loop: WRIT_FAULT_ITERATIONS if set, else `short_default`
// (what `make test` runs), scaled down in sanitizer builds.
int Iterations(int short_default);
// WRIT_FAULT_SEED if set, else from the clock; printed so a failure can be replayed.
uint64_t Seed(const std::string& test);
bool Sanitized();

// `writ serve --listen 127.0.0.1:0 --provider tcp --data DIR EXTRA...`, stderr in a file.
class Receiver {
 public:
  static std::unique_ptr<Receiver> Start(const std::string& data_dir, const std::string& err_path,
                                         std::vector<std::string> extra = {});
  const std::string& address() const { return address_; }
  ChildProcess& process() { return *proc_; }
  std::string Stderr() const;
  // The recovery summary line's numbers, from stderr.
  struct Recovery {
    bool found = false;
    uint64_t retained = 0, rehashed = 0, corrupt = 0, orphans = 0, unreceipted = 0;
  };
  Recovery ParseRecovery() const;
  void Kill();  // SIGKILL, then reap
  int Stop();   // SIGTERM, then the exit code

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string address_, err_path_;
  bool done_ = false;
};

struct Delivery {
  std::string id;
  std::string file;
  uint64_t bytes = 0;
  std::string retention;  // process-restart | power-loss
  int exit_code = -1;
  bool receipted = false;  // exit 0 with a retained receipt of its class
  std::string digest;      // as the sender computed it (from its JSON), when it printed one
  uint64_t pattern = 0;    // the file is this pattern stream (common/pattern.h)
  std::string err;
};

// The bytes of a pattern stream.
std::string PatternBytes(uint64_t pattern, uint64_t bytes);

// Runs one `writ send` of a new pattern file to completion.
Delivery SendOne(const std::string& address, const std::string& dir, const std::string& id,
                 uint64_t bytes, uint64_t chunk, const std::string& retention, uint64_t pattern);

// Senders streaming deliveries (a few at a time, each one a `writ send` process) until
// Stop(); sizes, chunk sizes and classes are drawn from the seeded generator.
class Stream {
 public:
  Stream(std::string address, std::string dir, std::string prefix, uint64_t seed, int senders,
         std::vector<std::string> classes);
  ~Stream();
  // Waits until `n` deliveries have finished (or the timeout); false on timeout.
  bool WaitFinished(size_t n, std::chrono::milliseconds timeout);
  // Waits for every sender in flight to finish (they fail once the receiver is gone).
  std::vector<Delivery> Stop();
  size_t finished() const { return finished_.load(); }

 private:
  void Run(int slot);
  std::string address_, dir_, prefix_;
  std::vector<std::string> classes_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> finished_{0};
  std::atomic<uint64_t> next_{0};
  uint64_t seed_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Delivery> done_;
  std::vector<std::thread> threads_;
};

// Waits until the random moment of this iteration's failure -- random on purpose, drawn from
// `rng`; that is the point of the fault loops, not a wait for something. Odd iterations: a
// random delay from the start (often mid-delivery or mid-commit). Even ones: a random delay
// after a random number (1-4) of deliveries finished (an event), so every iteration has
// receipts to lose however slow the build. False when the senders stalled.
bool WaitForFailureMoment(Stream& stream, int iteration, std::mt19937_64& rng);

// The file's bytes.
std::string ReadFile(const std::string& path);

// What `writ store ls --json` lists: id -> (bytes, digest, retention).
struct Listed {
  uint64_t bytes = 0;
  std::string digest, retention;
};
std::map<std::string, Listed> StoreLs(const std::string& data_dir);

// Figures of a fault loop, for docs/reliability.md.
struct Tally {
  uint64_t iterations = 0, attempted = 0, receipted_pr = 0, receipted_pl = 0, survived = 0,
           vanished_pr = 0, retained_without_receipt = 0, corrupt_dropped_at_recovery = 0,
           orphans_removed = 0, corrupt_reported = 0, cut_discarded_bytes = 0,
           retired = 0;  // removed by RetireAllBut after surviving every restart until then
  std::string Line() const;
};

// Everything the senders attempted, and what must be found after a restart.
struct Ledger {
  std::map<std::string, Delivery> all;
  std::set<std::string> must_survive;  // receipted with a class that covers the failure
  std::set<std::string> may_vanish;    // receipted, class does not cover it, not yet seen gone
};

// After a restart: every delivery of `must_survive` is listed with its digest; every listed
// delivery is one a sender sent; those re-hashed by `store check` are intact: all of them when
// `whole_store`, else the `recent` ones and a random 32 of the older ones; the `recent` deliveries
// (receipted or not) and a sample of older ones answer `query` as the index says, and those
// retained yield identical bytes from `store cat`. Receipted deliveries of `may_vanish` that
// are gone are counted (and forgotten). Adds the figures to `tally`.
void CheckAfterRestart(Receiver& receiver, const std::string& data_dir, Ledger& ledger,
                       const std::vector<std::string>& recent, std::mt19937_64& rng, Tally& tally,
                       bool whole_store = true);

// Stops `receiver`, removes (`writ store rm`) all but `keep` of the deliveries it retains, at
// random, and forgets them in `ledger`; returns a receiver started again on `data_dir`. Keeps
// a long loop's store, and so each restart's recovery, from growing with the iteration count.
std::unique_ptr<Receiver> RetireAllBut(std::unique_ptr<Receiver> receiver,
                                       const std::string& data_dir, const std::string& err_path,
                                       size_t keep, Ledger& ledger, std::mt19937_64& rng,
                                       Tally& tally);

}  // namespace writ::testing::faults
