// Receipts and output (docs/security.md): only the canonical signed fields of a receipt
// verify, and no id, issuer or answer field can put control characters on the terminal
// of whoever reads writ's human output.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <thread>

#include "protocol/control_channel.h"
#include "receipt/signing.h"
#include "writ/receipt.h"
#include "writ_harness.h"

namespace writ::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// ESC sequence (clear screen), a newline forging a line of output, a byte that is not UTF-8.
const std::string kHostile = "\x1b[2J\nwrit: valid: forged \xff";
// The same for JSON, which carries only UTF-8: a C1 control (CSI) instead of 0xff.
const std::string kHostileUtf8 = "\x1b[2J\nwrit: valid: forged \xc2\x9b";

// No byte a terminal acts on: ESC, other C0 controls but the line ends, DEL, and no
// byte of invalid UTF-8 (0xff never occurs in UTF-8).
void ExpectNothingRaw(const std::string& text, const std::string& what) {
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << what << ": raw ESC in\n" << text;
  EXPECT_EQ(text.find('\xff'), std::string::npos) << what << ": raw 0xff in\n" << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << what << ": raw C1 CSI in\n" << text;
  EXPECT_EQ(text.find("\nwrit: valid: forged"), std::string::npos) << what << ": a forged line in\n"
                                                                   << text;
}

std::string SignedReceipt(const std::string& id, const std::string& issuer) {
  Receipt r;
  r.rung = ReceiptRung::kValidated;
  r.delivery = {id, 4, "crc32c", "e3069283", 1, 4};
  r.observer = "receiver application";
  r.issuer = issuer;
  r.issued_at = "2026-11-29T07:00:00.000Z";
  r.context = {"rdma_write_with_imm", "tcp", "tcp", "lo", "dram", "writ", "delivery", {}};
  r.statement = "validated";
  r.does_not_establish = "retention";
  r.rule_passed = "crc32c of the complete delivery";
  auto identity = receipt::Identity::Generate();
  EXPECT_TRUE(identity.ok());
  auto text = receipt::SignReceiptToJson(r, *identity);
  EXPECT_TRUE(text.ok());
  return *text;
}

TEST(HostileReceipts, OnlyTheSignedFieldsOfARealReceiptVerify) {
  TempDir dir;
  WritePatternFile(dir.File("data"), 7, 1 << 20);
  auto serve = Serve::Start("tcp", {"--identity", dir.File("server")});
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--json"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const json retained = sent.json["receipts"].back();
  const std::string path = dir.File("receipt.json");
  auto verify = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    return RunWrit({"verify", path});
  };
  EXPECT_EQ(verify(retained.dump()).exit_code, 0);
  CommandRun pretty = verify(retained.dump(2));
  EXPECT_EQ(pretty.exit_code, 0) << "pretty-printed, the same fields: " << pretty.err;

  json extra = retained;
  extra["signature"]["approved"] = true;
  CommandRun with_extra = verify(extra.dump());
  EXPECT_EQ(with_extra.exit_code, 5) << with_extra.out;
  EXPECT_NE(with_extra.err.find("signature.approved: unknown field"), std::string::npos)
      << with_extra.err;

  const std::string canonical = retained.dump();
  const std::string duplicated = "{\"issuer\":\"writ-serve@bank\"," + canonical.substr(1);
  CommandRun with_duplicate = verify(duplicated);
  EXPECT_EQ(with_duplicate.exit_code, 5) << with_duplicate.out;
  EXPECT_NE(with_duplicate.err.find("issuer: duplicate key"), std::string::npos)
      << with_duplicate.err;
}

TEST(HostileOutput, VerifyShowsASignedReceiptsIdEscaped) {
  TempDir dir;
  const std::string path = dir.File("receipt.json");
  std::ofstream(path) << SignedReceipt(kHostileUtf8, "writ-serve@" + kHostileUtf8);
  CommandRun verified = RunWrit({"verify", path});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  ExpectNothingRaw(verified.out + verified.err, "writ verify");
  EXPECT_NE(verified.out.find("\\x1b[2J\\nwrit: valid: forged \\u{009b}"), std::string::npos)
      << verified.out;

  // An error naming a field from the file shows it escaped too.
  json forged = json::parse(SignedReceipt("x", "y"));
  forged["signature"]["key_id"] = kHostileUtf8;
  std::ofstream(path, std::ios::trunc) << forged.dump();
  CommandRun refused = RunWrit({"verify", path});
  EXPECT_EQ(refused.exit_code, 5);
  ExpectNothingRaw(refused.out + refused.err, "writ verify (refused)");
}

TEST(HostileOutput, SendShowsAnIdWithControlCharactersEscaped) {
  TempDir dir;
  WritePatternFile(dir.File("data"), 8, 4096);
  auto serve = Serve::Start("tcp");
  ASSERT_TRUE(serve);
  CommandRun sent = RunWrit({"send", dir.File("data"), "--to", serve->address(), "--id", kHostile});
  EXPECT_NE(sent.exit_code, 0) << "an id that is not printable ASCII is refused";
  ExpectNothingRaw(sent.out + sent.err, "writ send");
}

// A receiver that says hello, reads one query and answers it with `answer`.
void AnswerOneQuery(protocol::ControlListener& listener, const std::string& answer) {
  auto channel = listener.Accept(20s);
  if (!channel.ok()) return;
  (void)channel->Send(protocol::Hello{1, "tcp", {1, 2, 3, 4}, "hostile-receiver", 1});
  auto query = channel->Receive(20s);
  if (!query.ok()) return;
  const auto* q = std::get_if<protocol::Query>(&*query);
  if (q == nullptr) return;
  (void)channel->Send(protocol::QueryAnswer{q->delivery_id, answer});
  (void)channel->Receive(5s);  // until the client closes
}

TEST(HostileOutput, QueryShowsWhatAHostileReceiverAnswersEscaped) {
  auto listener = protocol::ControlListener::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const json answer = {
      {"state", "retained"},  {"retention", kHostileUtf8}, {"bytes", 4},
      {"rule", kHostileUtf8}, {"digest", kHostileUtf8},    {"receipts", json::array()}};
  std::thread receiver(AnswerOneQuery, std::ref(*listener), answer.dump());
  CommandRun queried = RunWrit({"query", "RC-233", "--to", listener->address()});
  receiver.join();
  EXPECT_EQ(queried.exit_code, 0) << queried.err;
  ExpectNothingRaw(queried.out + queried.err, "writ query");
  EXPECT_NE(queried.out.find("\\x1b[2J"), std::string::npos) << queried.out;
}

// Renames the one delivery of a stopped receiver's index to `id` (a data directory
// copied from elsewhere, or edited).
void RenameOnlyDelivery(const std::string& data, const std::string& id) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((data + "/index.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE deliveries SET id = ?", -1, &stmt, nullptr), SQLITE_OK);
  sqlite3_bind_text(stmt, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(HostileOutput, StoreLsShowsIdsFromTheIndexEscaped) {
  TempDir dir;
  WritePatternFile(dir.File("data"), 9, 4096);
  const std::string data = dir.File("store");
  {
    auto serve = Serve::Start("tcp", {"--data", data});
    ASSERT_TRUE(serve);
    CommandRun sent = RunWrit(
        {"send", dir.File("data"), "--to", serve->address(), "--retention", "process-restart"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
    ASSERT_EQ(serve->Stop(), 0);
  }
  RenameOnlyDelivery(data, kHostile);
  CommandRun listed = RunWrit({"store", "ls", "--data", data});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  ExpectNothingRaw(listed.out + listed.err, "writ store ls");
  EXPECT_NE(listed.out.find("\\x1b[2J\\nwrit: valid: forged \\xff"), std::string::npos)
      << listed.out;
  CommandRun cat = RunWrit({"store", "cat", "no-such-id\x1b[2J", "--data", data});
  EXPECT_NE(cat.exit_code, 0);
  ExpectNothingRaw(cat.err, "writ store cat (not found)");
}

}  // namespace
}  // namespace writ::testing
