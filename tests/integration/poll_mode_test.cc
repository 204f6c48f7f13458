// `--poll busy` (docs/cli.md): a busy-polling serve and sender still complete deliveries,
// one chunk and several, over every loopback provider; and receipts the receiver signed
// together, and a lone small delivery's rungs signed once, verify with `writ verify`.
#include <gtest/gtest.h>

#include <fstream>

#include "provider_matrix.h"
#include "receipt/signing.h"
#include "requirement.h"
#include "sample_receipt.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;

class BusyPoll : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_OR_FAIL(ProviderAvailable(GetParam()),
                    "provider " << GetParam() << " cannot serve on this machine");
  }
};

TEST_P(BusyPoll, BusyServeAndBusySenderCompleteDeliveries) {
  TempDir dir;
  WritePatternFile(dir.File("small"), 1, 4096);
  WritePatternFile(dir.File("chunks"), 2, 3 << 20);
  auto serve = Serve::Start(GetParam(), {"--poll", "busy"});
  ASSERT_TRUE(serve);
  for (const char* file : {"small", "chunks"}) {
    SCOPED_TRACE(file);
    CommandRun run = RunWrit({"send", dir.File(file), "--to", serve->address(), "--chunk-size",
                              "1MiB", "--poll", "busy", "--retention", "volatile", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(Rungs(run.json),
              (std::vector<std::string>{"transport", "received", "validated", "retained"}));
  }
  // A blocking sender against the busy serve, too.
  CommandRun blocking = RunWrit(
      {"send", dir.File("small"), "--to", serve->address(), "--id", "small-again", "--json"});
  EXPECT_EQ(blocking.exit_code, 0) << blocking.err;
  EXPECT_EQ(serve->Stop(), 0);
}

INSTANTIATE_TEST_SUITE_P(Loopback, BusyPoll, ::testing::ValuesIn(LoopbackProviderNames()),
                         ProviderName);

TEST(PollFlag, AnUnknownModeIsAUsageError) {
  CommandRun run = RunWrit({"serve", "--poll", "sometimes"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
}

Receipt Validated(int i) {
  return SampleReceipt(ReceiptRung::kValidated, "G-" + std::to_string(i));
}

TEST(GroupReceipts, WritVerifyChecksEachMemberAloneAndNamesATamperedPath) {
  TempDir dir;
  auto identity = receipt::Identity::Generate();
  ASSERT_TRUE(identity.ok());
  std::vector<Receipt> group{Validated(0), Validated(1), Validated(2)};
  auto signed_json = receipt::SignReceiptGroupToJson(group, *identity);
  ASSERT_TRUE(signed_json.ok());
  const std::string key = receipt::PublicKeyHex(identity->public_key());
  for (size_t i = 0; i < signed_json->size(); ++i) {
    const std::string path = dir.File("r" + std::to_string(i) + ".json");
    std::ofstream(path) << (*signed_json)[i];
    CommandRun run = RunWrit({"verify", path, "--key", key});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("valid: validated receipt for G-" + std::to_string(i)),
              std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("group: receipt " + std::to_string(i + 1) + " of 3"), std::string::npos)
        << run.out;
  }
  json tampered = json::parse((*signed_json)[2]);
  tampered["signature"]["path"][0]["side"] = "right";
  std::ofstream(dir.File("tampered.json")) << tampered.dump();
  CommandRun bad = RunWrit({"verify", dir.File("tampered.json")});
  EXPECT_EQ(bad.exit_code, 5);
  EXPECT_NE(bad.err.find("signature.path[0].side: 'right', but leaf 2 of 3 needs 'left'"),
            std::string::npos)
      << bad.err;
}

// A lone small delivery's rungs, reached together, are signed once (docs/protocol.md,
// "Receipts ready together"): `received`, `validated` and `retained` share one root; each
// verifies alone; a changed member, path or root fails.
TEST(GroupReceipts, ALoneSmallDeliverysRungsShareOneSignatureAndEachVerifiesAlone) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  WritePatternFile(dir.File("small"), 3, 4096);
  auto serve = Serve::Start("tcp");
  ASSERT_TRUE(serve);
  CommandRun run = RunWrit(
      {"send", dir.File("small"), "--to", serve->address(), "--retention", "volatile", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(Rungs(run.json),
            (std::vector<std::string>{"transport", "received", "validated", "retained"}));
  std::vector<std::string> files;
  for (size_t i = 1; i < 4; ++i) {
    const json& r = run.json["receipts"][i];
    EXPECT_EQ(r["signature"]["algorithm"], "ed25519-merkle-sha256") << r.dump();
    EXPECT_EQ(r["signature"]["leaves"], 3);
    EXPECT_EQ(r["signature"]["leaf_index"], i - 1);
    EXPECT_EQ(r["signature"]["root"], run.json["receipts"][1]["signature"]["root"]);
    files.push_back(dir.File("r" + std::to_string(i) + ".json"));
    std::ofstream(files.back()) << r.dump();
    CommandRun verified = RunWrit({"verify", files.back()});
    EXPECT_EQ(verified.exit_code, 0) << verified.err;
  }
  const json retained = run.json["receipts"][3];
  json member = retained;
  member["statement"] = "the validated delivery is retained forever";
  json path = retained;
  path["signature"]["path"][0]["hash"] = std::string(64, '0');
  json root = retained;
  root["signature"]["root"] = std::string(64, '0');
  for (const auto& [name, tampered] :
       {std::pair{"member", member}, {"path", path}, {"root", root}}) {
    SCOPED_TRACE(name);
    std::ofstream(dir.File("bad.json")) << tampered.dump();
    EXPECT_EQ(RunWrit({"verify", dir.File("bad.json")}).exit_code, 5);
  }
  EXPECT_EQ(serve->Stop(), 0);
}

// A durable commit records the receipts issued before it in its index row: `received` and
// `validated` are signed together before it, `retained` alone after it; `writ store check`
// verifies each stored receipt alone.
TEST(GroupReceipts, ADurableSmallDeliveryPaysTwoSignaturesAndStoreCheckVerifiesThem) {
  REQUIRE_OR_FAIL(ProviderAvailable("tcp"), "provider tcp cannot serve on this machine");
  TempDir dir;
  WritePatternFile(dir.File("small"), 4, 4096);
  const std::string data = dir.File("data");
  auto serve = Serve::Start("tcp", {"--data", data});
  ASSERT_TRUE(serve);
  CommandRun run = RunWrit({"send", dir.File("small"), "--to", serve->address(), "--retention",
                            "process-restart", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(Rungs(run.json),
            (std::vector<std::string>{"transport", "received", "validated", "retained"}));
  const json& receipts = run.json["receipts"];
  EXPECT_EQ(receipts[1]["signature"]["leaves"], 2);
  EXPECT_EQ(receipts[1]["signature"]["root"], receipts[2]["signature"]["root"]);
  EXPECT_EQ(receipts[3]["signature"]["algorithm"], "ed25519");
  EXPECT_EQ(serve->Stop(), 0);
  CommandRun checked = RunWrit({"store", "check", "--data", data});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
}

}  // namespace
}  // namespace writ::testing
