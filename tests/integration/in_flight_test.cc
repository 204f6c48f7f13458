// Many deliveries in flight on one writ::Sender session against a real `writ serve`:
// submitted from several threads, each gets its own outcome; a refused one leaves the
// others alone; a receiver killed mid-flight fails every one; `writ send` of several files.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "byte_sizes.h"
#include "common/hex.h"
#include "digest_hex.h"
#include "provider_matrix.h"
#include "requirement.h"
#include "vocabulary/digest.h"
#include "writ/sender.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using namespace std::chrono_literals;

class InFlight : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " cannot serve on this machine");
    serve_ = Serve::Start(GetParam(), {"--max-deliveries-per-sender", "64"});
    ASSERT_TRUE(serve_);
  }

  std::unique_ptr<Sender> Connect(uint32_t max_in_flight) {
    SessionOptions options;
    options.to = serve_->address();
    options.identity_dir = dir_.File("identity");
    options.max_in_flight = max_in_flight;
    auto sender = Sender::Connect(options);
    EXPECT_TRUE(sender.ok()) << sender.status().ToString();
    return sender.ok() ? std::move(sender).value() : nullptr;
  }

  static DeliveryOptions Options(const std::string& id, uint64_t chunk = 64 * kKiB) {
    DeliveryOptions o;
    o.id = id;
    o.chunk_size = chunk;
    o.stall_timeout = 20s;
    return o;
  }

  TempDir dir_;
  std::unique_ptr<Serve> serve_;
};

TEST_P(InFlight, SixtyFourSmallDeliveriesFromSeveralThreadsEachGetTheirOwnOutcome) {
  auto sender = Connect(64);
  ASSERT_TRUE(sender);
  EXPECT_EQ(sender->max_in_flight(), 64u) << "the receiver's hello allows 64 here";
  constexpr int kThreads = 4, kEach = 16;
  // Every delivery has bytes of its own, so a receipt of another would show.
  std::vector<std::vector<uint8_t>> bytes(kThreads * kEach);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i].resize(4 * kKiB);
    for (size_t b = 0; b < bytes[i].size(); ++b) bytes[i][b] = static_cast<uint8_t>(i * 31 + b);
  }
  // One among them asks for a rung this receiver never offers: refused on its own.
  const size_t refused = 37;
  std::vector<DeliveryHandle> handles(bytes.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kEach; ++k) {
        const size_t i = static_cast<size_t>(t * kEach + k);
        DeliveryOptions o = Options("small-" + std::to_string(i));
        if (i == refused) o.until = Rung::kProcessed;
        handles[i] = sender->SubmitBytes(bytes[i], o);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < handles.size(); ++i) {
    const DeliveryOutcome& o = handles[i].Wait();
    const std::string id = "small-" + std::to_string(i);
    EXPECT_EQ(o.delivery.id, id);
    if (i == refused) {
      EXPECT_EQ(o.status.code(), ErrorCode::kRefused) << o.status.ToString();
      continue;
    }
    ASSERT_TRUE(o.status.ok()) << id << ": " << o.status.ToString();
    EXPECT_EQ(o.delivery.digest, DigestOf(bytes[i])) << id;
    ASSERT_EQ(o.receipts.size(), 4u) << id;
    for (const auto& r : o.receipts) {
      EXPECT_EQ(r.delivery.id, id);
      EXPECT_EQ(r.delivery.digest, o.delivery.digest) << id << " " << ReceiptRungName(r.rung);
    }
    ASSERT_TRUE(o.reached_retention.has_value());
  }
  EXPECT_TRUE(sender->usable()) << sender->health().ToString();
  EXPECT_EQ(sender->deliveries(), bytes.size());
  // The session goes on after all of them.
  const DeliveryOutcome after = sender->SendBytes(bytes[0], Options("after"));
  EXPECT_TRUE(after.status.ok()) << after.status.ToString();
}

TEST_P(InFlight, AReceiverKilledMidFlightFailsEveryDelivery) {
  auto sender = Connect(8);
  ASSERT_TRUE(sender);
  WriteSparseFile(dir_.File("big"), 128 * kMiB);
  std::atomic<bool> killed = false;
  std::vector<DeliveryHandle> handles;
  for (int i = 0; i < 12; ++i) {
    DeliveryOptions o = Options("big-" + std::to_string(i), kMiB);
    if (i == 0) {
      o.progress = [&](uint64_t done, uint64_t) {
        if (!killed && done >= 4 * kMiB) {
          killed = true;
          serve_->process().Kill(SIGKILL);
        }
      };
    }
    handles.push_back(sender->Submit(dir_.File("big"), o));
  }
  for (const auto& handle : handles) {
    const DeliveryOutcome& o = handle.Wait();
    EXPECT_FALSE(o.status.ok()) << o.delivery.id;
    EXPECT_EQ(o.status.code(), ErrorCode::kTransport)
        << o.delivery.id << ": " << o.status.ToString();
  }
  EXPECT_TRUE(killed);
  EXPECT_FALSE(sender->usable());
  EXPECT_EQ(sender->Submit(dir_.File("big"), Options("later")).Wait().status.code(),
            ErrorCode::kTransport);
}

TEST_P(InFlight, SendOfADirectoryIsOneDeliveryPerFileAndATotal) {
  const std::string dir = dir_.File("batch");
  std::filesystem::create_directory(dir);
  for (int i = 0; i < 5; ++i) {
    WritePatternFile(dir + "/f" + std::to_string(i), 40 + i, (i + 1) * 3 * kKiB);
  }
  CommandRun text = RunWrit({"send", dir, "--to", serve_->address(), "--in-flight", "3"});
  ASSERT_EQ(text.exit_code, 0) << text.err << text.out;
  std::istringstream lines(text.out);
  std::string line;
  int deliveries = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("f", 0) == 0) {
      ++deliveries;
      EXPECT_NE(line.find("validated, retained volatile  ok"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(deliveries, 5);
  EXPECT_NE(text.out.find("total: 5 deliveries, 5 ok, 0 failed"), std::string::npos) << text.out;

  // --json: an array of one document per delivery; a refused one makes the exit code its own.
  CommandRun json = RunWrit({"send", dir + "/f0", dir + "/f1", "--to", serve_->address(), "--until",
                             "processed", "--json"});
  EXPECT_EQ(json.exit_code, 3) << json.err;
  ASSERT_TRUE(json.json.is_array()) << json.out;
  ASSERT_EQ(json.json.size(), 2u);
  EXPECT_EQ(json.json[0]["delivery"]["id"], "f0");
  EXPECT_EQ(json.json[1]["delivery"]["id"], "f1");
  EXPECT_NE(json.err.find("total: 2 deliveries, 0 ok, 2 failed"), std::string::npos) << json.err;
}

// The receiver grants a session its standing window with the first retained delivery;
// `writ send` of several small files one at a time says which went through it.
TEST_P(InFlight, SendJsonSaysWhichDeliveriesWentThroughTheStandingWindow) {
  std::vector<std::string> files;
  for (int i = 0; i < 5; ++i) {
    files.push_back(dir_.File("small" + std::to_string(i)));
    WritePatternFile(files.back(), 60 + i, 4 * kKiB);
  }
  const std::string to = serve_->address();
  CommandRun run =
      RunWrit({"send", files[0], files[1], files[2], "--to", to, "--in-flight", "1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  ASSERT_TRUE(run.json.is_array()) << run.out;
  ASSERT_EQ(run.json.size(), 3u);
  EXPECT_EQ(run.json[0]["ring"], false) << "the first is announced: no ring was granted yet";
  EXPECT_EQ(run.json[2]["ring"], true) << run.json[2].dump();

  CommandRun off =
      RunWrit({"send", files[3], files[4], "--to", to, "--in-flight", "1", "--no-ring", "--json"});
  ASSERT_EQ(off.exit_code, 0) << off.err << off.out;
  ASSERT_TRUE(off.json.is_array()) << off.out;
  for (const auto& doc : off.json) EXPECT_EQ(doc["ring"], false) << doc.dump();
}

INSTANTIATE_TEST_SUITE_P(Providers, InFlight, ::testing::ValuesIn(testing::LoopbackProviderNames()),
                         testing::ProviderName);

}  // namespace
}  // namespace writ::testing
