#include "fault_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/pattern.h"

namespace writ::testing::faults {

using json = nlohmann::json;
using namespace std::chrono_literals;

bool Sanitized() {
#if defined(WRIT_SANITIZED)
  return true;
#else
  return false;
#endif
}

int Iterations(int short_default) {
  if (const char* env = std::getenv("WRIT_FAULT_ITERATIONS"); env && *env) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  if (Sanitized()) {
    const int n = std::max(4, short_default / 4);
    std::cout << "ASan/UBSan build: " << n << " iterations instead of " << short_default
              << " (sanitized processes are several times slower; the release build runs the full "
                 "short count, WRIT_FAULT_ITERATIONS=200 the long one)"
              << std::endl;
    return n;
  }
  return short_default;
}

uint64_t Seed(const std::string& test) {
  uint64_t seed = 0;
  if (const char* env = std::getenv("WRIT_FAULT_SEED"); env && *env) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = std::random_device{}() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    seed %= 1000000007ull;
  }
  std::cout << test << ": seed " << seed << " (WRIT_FAULT_SEED=" << seed << " replays it)"
            << std::endl;
  return seed;
}

// ---- the receiver ---------------------------------------------------------------------------

std::unique_ptr<Receiver> Receiver::Start(const std::string& data_dir, const std::string& err_path,
                                          std::vector<std::string> extra) {
  std::vector<std::string> argv = {WritBinary(),    "serve", "--listen",      "127.0.0.1:0",
                                   "--provider",    "tcp",   "--data",        data_dir,
                                   "--window-pool", "64MiB", "--window-size", "4MiB"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto proc = ChildProcess::Start(argv, false, err_path);
  if (!proc.ok()) {
    ADD_FAILURE() << proc.status().ToString();
    return nullptr;
  }
  auto r = std::unique_ptr<Receiver>(new Receiver());
  r->proc_ = std::make_unique<ChildProcess>(std::move(proc).value());
  r->err_path_ = err_path;
  auto line = r->proc_->ReadLineStartingWith("writ: listening on ", 120s);
  if (!line.ok()) {
    ADD_FAILURE() << "writ serve --data " << data_dir
                  << " did not start: " << line.status().ToString() << "\nstderr:\n"
                  << r->Stderr();
    return nullptr;
  }
  std::istringstream in(line->substr(std::string("writ: listening on ").size()));
  in >> r->address_;
  return r;
}

std::string Receiver::Stderr() const { return ReadFile(err_path_); }

Receiver::Recovery Receiver::ParseRecovery() const {
  Recovery rec;
  std::istringstream in(Stderr());
  for (std::string line; std::getline(in, line);) {
    const std::string key = "writ: store recovery: ";
    if (line.rfind(key, 0) != 0 || line.find(" retained, ") == std::string::npos) continue;
    unsigned long long a = 0, b = 0, c = 0, d = 0, e = 0;
    if (std::sscanf(
            line.c_str() + key.size(),
            "%llu retained, %llu re-hashed, %llu corrupt dropped, %llu orphans removed, %llu "
            "unreceipted dropped",
            &a, &b, &c, &d, &e) == 5) {
      rec = Recovery{true, a, b, c, d, e};
    }
  }
  return rec;
}

void Receiver::Kill() {
  if (done_) return;
  done_ = true;
  proc_->Kill(SIGKILL);
  (void)proc_->Wait(60s);
}

int Receiver::Stop() {
  if (done_) return -1;
  done_ = true;
  proc_->Kill(SIGTERM);
  auto code = proc_->Wait(120s);
  return code.ok() ? *code : -1;
}

// ---- senders --------------------------------------------------------------------------------

bool WaitForFailureMoment(Stream& stream, int iteration, std::mt19937_64& rng) {
  if (iteration % 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 600));
    return true;
  }
  const bool finished = stream.WaitFinished(1 + rng() % 4, std::chrono::minutes(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
  return finished;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string PatternBytes(uint64_t pattern, uint64_t bytes) {
  std::string out(bytes, '\0');
  FillPattern(pattern, 0, reinterpret_cast<uint8_t*>(out.data()), out.size());
  return out;
}

Delivery SendOne(const std::string& address, const std::string& dir, const std::string& id,
                 uint64_t bytes, uint64_t chunk, const std::string& retention, uint64_t pattern) {
  Delivery d;
  d.id = id;
  d.bytes = bytes;
  d.retention = retention;
  d.pattern = pattern;
  d.file = dir + "/" + id;
  WritePatternFile(d.file, pattern, bytes);
  const std::string err = dir + "/" + id + ".err";
  auto proc = StartWrit({"send", d.file, "--to", address, "--id", id, "--chunk-size",
                         std::to_string(chunk), "--retention", retention, "--json"},
                        err);
  if (!proc) return d;
  CommandRun run = FinishWrit(*proc, err);
  d.exit_code = run.exit_code;
  d.err = run.err;
  if (run.json.is_object()) {
    d.digest = run.json["delivery"].value("digest", "");
    for (const auto& r : run.json.value("receipts", json::array())) {
      if (r.value("rung", "") == "retained" && r.value("retention", "") == retention)
        d.receipted = true;
    }
  }
  d.receipted = d.receipted && run.exit_code == 0;
  std::remove(d.file.c_str());  // the pattern regenerates the bytes for comparisons
  std::remove(err.c_str());
  return d;
}

Stream::Stream(std::string address, std::string dir, std::string prefix, uint64_t seed, int senders,
               std::vector<std::string> classes)
    : address_(std::move(address)),
      dir_(std::move(dir)),
      prefix_(std::move(prefix)),
      classes_(std::move(classes)),
      seed_(seed) {
  for (int i = 0; i < senders; ++i) threads_.emplace_back([this, i] { Run(i); });
}

Stream::~Stream() {
  if (!threads_.empty()) (void)Stop();
}

void Stream::Run(int slot) {
  std::mt19937_64 rng(seed_ * 7919 + static_cast<uint64_t>(slot));
  static constexpr uint64_t kChunks[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
  while (!stop_.load()) {
    const uint64_t n = next_.fetch_add(1);
    const uint64_t kind = rng() % 100;
    uint64_t bytes = kind < 70   ? 1 + rng() % (256 << 10)
                     : kind < 95 ? (256 << 10) + rng() % (1792 << 10)
                                 : (2 << 20) + rng() % (4 << 20);
    const uint64_t chunk = kChunks[rng() % 4];
    const std::string& cls = classes_[rng() % classes_.size()];
    const std::string id = prefix_ + "-" + std::to_string(n);
    Delivery d = SendOne(address_, dir_, id, bytes, chunk, cls, seed_ * 1000003 + n);
    {
      std::lock_guard lock(mu_);
      done_.push_back(std::move(d));
      finished_.fetch_add(1);
    }
    cv_.notify_all();
  }
}

bool Stream::WaitFinished(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return done_.size() >= n; });
}

std::vector<Delivery> Stream::Stop() {
  stop_.store(true);
  for (auto& t : threads_) t.join();
  threads_.clear();
  std::lock_guard lock(mu_);
  return done_;
}

// ---- checks ---------------------------------------------------------------------------------

std::map<std::string, Listed> StoreLs(const std::string& data_dir) {
  std::map<std::string, Listed> out;
  CommandRun run = RunWrit({"store", "ls", "--data", data_dir, "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (!run.json.is_object()) {
    ADD_FAILURE() << "store ls --json printed no JSON: " << run.out.substr(0, 500) << run.err;
    return out;
  }
  for (const auto& d : run.json["deliveries"]) {
    out[d["id"].get<std::string>()] =
        Listed{d["bytes"].get<uint64_t>(), d["digest"].get<std::string>(),
               d["retention"].get<std::string>()};
  }
  return out;
}

std::string Tally::Line() const {
  std::ostringstream o;
  o << "iterations " << iterations << ", deliveries attempted " << attempted << ", receipted "
    << receipted_pl << " power-loss + " << receipted_pr << " process-restart, survived " << survived
    << ", vanished (process-restart) " << vanished_pr << ", retained without a receipt (intact) "
    << retained_without_receipt << ", dropped at recovery as corrupt "
    << corrupt_dropped_at_recovery << ", orphans removed " << orphans_removed
    << ", corrupt reported retained " << corrupt_reported;
  if (cut_discarded_bytes) o << ", unsynced bytes discarded by cuts " << cut_discarded_bytes;
  if (retired) o << ", retired from the store after surviving " << retired;
  return o.str();
}

namespace {

// query + store cat of one delivery that `listed` says is retained (or not).
void CheckOne(Receiver& receiver, const std::string& data_dir, const Delivery& d,
              const Listed* listed) {
  SCOPED_TRACE("delivery " + d.id + " (" + d.retention + ", " + std::to_string(d.bytes) +
               " bytes, sender exit " + std::to_string(d.exit_code) + ")");
  CommandRun q = RunWrit({"query", d.id, "--to", receiver.address(), "--json"});
  if (listed == nullptr) {
    EXPECT_EQ(q.exit_code, 1) << "not in the index, so query must not report it: " << q.out
                              << q.err;
    CommandRun cat = RunWrit({"store", "cat", d.id, "--data", data_dir});
    EXPECT_EQ(cat.exit_code, 1) << cat.err;
    return;
  }
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.json.value("state", ""), "retained");
  EXPECT_EQ(q.json.value("digest", ""), listed->digest);
  EXPECT_EQ(q.json.value("bytes", uint64_t{0}), d.bytes);
  if (!d.digest.empty()) {
    EXPECT_EQ(listed->digest, d.digest) << "the digest the sender computed";
  }
  CommandRun cat = RunWrit({"store", "cat", d.id, "--data", data_dir});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  ASSERT_EQ(cat.out.size(), d.bytes);
  EXPECT_TRUE(cat.out == PatternBytes(d.pattern, d.bytes))
      << "store cat must yield identical bytes";
}

}  // namespace

// `store check` of the whole store, or of the recent deliveries it lists and a random few
// older ones.
void CheckStored(const std::string& data_dir, const std::map<std::string, Listed>& listed,
                 const std::vector<std::string>& recent, bool whole_store, std::mt19937_64& rng,
                 Tally& tally) {
  std::vector<std::string> argv = {"store", "check", "--data", data_dir, "--json"};
  size_t expected = listed.size();
  if (!whole_store) {
    std::set<std::string> ids;
    for (const auto& id : recent) {
      if (listed.contains(id)) ids.insert(id);
    }
    std::vector<std::string> all;
    for (const auto& [id, l] : listed) all.push_back(id);
    std::shuffle(all.begin(), all.end(), rng);
    for (size_t i = 0; i < all.size() && i < 32; ++i) ids.insert(all[i]);
    if (ids.empty()) return;
    argv.insert(argv.end(), ids.begin(), ids.end());
    expected = ids.size();
  }
  CommandRun check = RunWrit(argv);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  if (check.json.is_object()) {
    const size_t bad = check.json["mismatched"].size();
    tally.corrupt_reported += bad;
    EXPECT_EQ(bad, 0u) << check.json.dump(2);
    EXPECT_EQ(check.json.value("checked", size_t{0}), expected);
  } else {
    ADD_FAILURE() << "store check --json printed no JSON: " << check.out << check.err;
  }
}

void CheckAfterRestart(Receiver& receiver, const std::string& data_dir, Ledger& ledger,
                       const std::vector<std::string>& recent, std::mt19937_64& rng, Tally& tally,
                       bool whole_store) {
  const auto listed = StoreLs(data_dir);
  for (const auto& id : ledger.must_survive) {
    auto it = listed.find(id);
    const Delivery& d = ledger.all.at(id);
    if (it == listed.end()) {
      ADD_FAILURE() << "receipted " << d.retention << " delivery " << id << " (" << d.bytes
                    << " bytes) is gone after the restart";
      continue;
    }
    EXPECT_EQ(it->second.digest, d.digest) << id;
    EXPECT_EQ(it->second.bytes, d.bytes) << id;
    EXPECT_EQ(it->second.retention, d.retention) << id;
  }
  for (auto it = ledger.may_vanish.begin(); it != ledger.may_vanish.end();) {
    auto l = listed.find(*it);
    if (l == listed.end()) {
      ++tally.vanished_pr;
      it = ledger.may_vanish.erase(it);
      continue;
    }
    EXPECT_EQ(l->second.digest, ledger.all.at(*it).digest) << *it;
    ++it;
  }
  for (const auto& [id, l] : listed) {
    EXPECT_TRUE(ledger.all.contains(id)) << "the store lists " << id << ", which no sender sent";
  }
  CheckStored(data_dir, listed, recent, whole_store, rng, tally);

  // Every recent delivery that is retained or receipted, and a few older ones, through the
  // running receiver (`query`) and offline (`store cat`). Each `writ` process costs a few
  // hundred ms to start, so they run a few at a time.
  std::set<std::string> sample;
  for (const auto& id : recent) {
    if (listed.contains(id) || ledger.all.at(id).receipted) sample.insert(id);
  }
  auto pick = [&](const std::set<std::string>& from, int n) {
    std::vector<std::string> v(from.begin(), from.end());
    std::shuffle(v.begin(), v.end(), rng);
    for (int i = 0; i < n && i < static_cast<int>(v.size()); ++i)
      sample.insert(v[static_cast<size_t>(i)]);
  };
  pick(ledger.must_survive, 2);
  pick(ledger.may_vanish, 1);
  if (!recent.empty()) sample.insert(recent[rng() % recent.size()]);  // maybe one never retained
  std::vector<std::string> ids(sample.begin(), sample.end());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < ids.size();) {
        auto it = listed.find(ids[i]);
        CheckOne(receiver, data_dir, ledger.all.at(ids[i]),
                 it == listed.end() ? nullptr : &it->second);
      }
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& id : recent) {
    if (listed.contains(id) && !ledger.all.at(id).receipted) ++tally.retained_without_receipt;
  }
  const Receiver::Recovery rec = receiver.ParseRecovery();
  EXPECT_TRUE(rec.found) << "writ serve did not report its recovery:\n" << receiver.Stderr();
  tally.corrupt_dropped_at_recovery += rec.corrupt;
  tally.orphans_removed += rec.orphans;
  EXPECT_EQ(rec.retained, listed.size()) << "recovery's count and the index agree";
}

std::unique_ptr<Receiver> RetireAllBut(std::unique_ptr<Receiver> receiver,
                                       const std::string& data_dir, const std::string& err_path,
                                       size_t keep, Ledger& ledger, std::mt19937_64& rng,
                                       Tally& tally) {
  EXPECT_EQ(receiver->Stop(), 0) << "a clean stop before retiring deliveries";
  receiver.reset();  // `store rm` takes the directory's lock
  const auto listed = StoreLs(data_dir);
  std::vector<std::string> ids;
  for (const auto& [id, l] : listed) ids.push_back(id);
  std::shuffle(ids.begin(), ids.end(), rng);
  if (ids.size() > keep)
    ids.resize(ids.size() - keep);
  else
    ids.clear();
  // One at a time: each `store rm` takes the directory's lock.
  for (const auto& id : ids) {
    CommandRun rm = RunWrit({"store", "rm", id, "--data", data_dir, "--force"});
    EXPECT_EQ(rm.exit_code, 0) << id << ": " << rm.err;
  }
  for (const auto& id : ids) {
    ledger.must_survive.erase(id);
    ledger.may_vanish.erase(id);
  }
  tally.retired += ids.size();
  return Receiver::Start(data_dir, err_path);
}

}  // namespace writ::testing::faults
